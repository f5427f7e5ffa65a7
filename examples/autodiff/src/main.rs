#![feature(autodiff)]
//! The seed, differentiated by Rust's `std::autodiff` (Enzyme inside rustc) through this
//! project's rules:
//!
//!     f(x) = sum(abs2, to_host(to_device(x))),  x = [1, 2, 3]  =>  dx = 2x = [2, 4, 6]
//!
//! The copies are raw-pointer `#[derivative_rule(copy, .., autodiff)]` primitives. The
//! attribute's `autodiff` option generates (with the runtime's `autodiff` feature, Cargo.toml), the
//! `extern "C"` primal Enzyme cannot see into, its augmented primal and reverse (the rule
//! object's own, so the shadow work is the rule's, on the copy's stream), the registration
//! static, and `<name>_ad`, the safe function called below. No rule is called by hand.
//!
//! `autodiff-seed host` runs the GPU-free cases (host copies with the same machinery);
//! `autodiff-seed` runs them and the GPU ones (device, pinned, pageable; needs a GPU).
use rules_runtime::autodiff::{AdBuf, AdPair, Calls, calls, take_error};
use rules_runtime::cudarc::driver::{CudaStream, DriverError, sys};
use rules_runtime::prelude::*;
use std::autodiff::{autodiff_forward, autodiff_reverse};

// ---- The copy primitives, annotated --------------------------------------------------------

/// Host -> host: the GPU-free stand-in for both copies of the seed.
#[derivative_rule(copy, dst = host, src = host, autodiff)]
unsafe fn host_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract (valid, non-overlapping ranges of `n` elements).
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// The same for any element type: `autodiff(f32, f64)` bridges each (`host_copy_any_ad_f64`).
#[derivative_rule(copy, dst = host, src = host, autodiff(f32, f64))]
unsafe fn host_copy_any<T: Differentiable>(
    #[dst] dst: *mut T,
    #[src] src: *const T,
    #[len] n: usize,
) {
    // SAFETY: as above.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// Host -> device (pageable source).
#[derivative_rule(copy, dst = device, src = host, autodiff)]
unsafe fn upload(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    // SAFETY: the rule's contract.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst as u64, src.cast(), n * 4, stream.cu_stream()).result() }
}

/// Device -> host (pageable destination); waits, so that the host sees the data.
#[derivative_rule(copy, dst = host, src = device, autodiff)]
unsafe fn download(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    // SAFETY: the rule's contract.
    unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst.cast(), src as u64, n * 4, stream.cu_stream()).result()?
    };
    stream.synchronize()
}

/// Device -> device.
#[derivative_rule(copy, dst = device, src = device, autodiff)]
unsafe fn copy_d2d(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    // SAFETY: the rule's contract.
    unsafe { sys::cuMemcpyDtoDAsync_v2(dst as u64, src as u64, n * 4, stream.cu_stream()).result() }
}

/// Device -> pinned host memory; waits.
#[derivative_rule(copy, dst = pinned, src = device, autodiff)]
unsafe fn download_pinned(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    // SAFETY: the rule's contract.
    unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst.cast(), src as u64, n * 4, stream.cu_stream()).result()?
    };
    stream.synchronize()
}

/// Pinned -> pageable host memory (a host copy once the stream is done with the pinned buffer).
#[derivative_rule(copy, dst = host, src = pinned, autodiff)]
unsafe fn unpin(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    stream.synchronize()?;
    // SAFETY: the rule's contract; the stream's work on `src` is done.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) };
    Ok(())
}

/// Pageable host -> unified memory.
#[derivative_rule(copy, dst = unified, src = host, autodiff)]
unsafe fn to_unified(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    // SAFETY: the rule's contract (a managed address is a device address under UVA).
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst as u64, src.cast(), n * 4, stream.cu_stream()).result() }
}

/// Unified -> pageable host memory; waits.
#[derivative_rule(copy, dst = host, src = unified, autodiff)]
unsafe fn from_unified(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    // SAFETY: the rule's contract.
    unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst.cast(), src as u64, n * 4, stream.cu_stream()).result()?
    };
    stream.synchronize()
}

/// A pitched 2D copy between pageable host rows (`width` elements of each of `height` rows,
/// rows `dp` / `sp` bytes apart): the GPU-free stand-in of the 2D round trip.
#[derivative_rule(copy2d, dst = host, src = host, autodiff)]
unsafe fn host_copy2d(
    #[dst] dst: *mut f32,
    #[dst_pitch] dp: usize,
    #[src] src: *const f32,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) {
    for r in 0..h {
        // SAFETY: the rule's contract (each row of the boxes lies in its buffer).
        unsafe { core::ptr::copy_nonoverlapping(src.add(r * sp / 4), dst.add(r * dp / 4), w) };
    }
}

/// A memset of `n` elements from `at` to the bit pattern `bits`, on pageable host memory.
#[derivative_rule(memset, dst = host, autodiff)]
unsafe fn host_set(#[dst] dst: *mut f32, #[dst_offset] at: usize, #[len] n: usize, bits: u32) {
    for i in 0..n {
        // SAFETY: the rule's contract.
        unsafe { dst.add(at + i).write(f32::from_bits(bits)) }
    }
}

/// One `cuMemcpy2DAsync` of a `w` × `h` box of f32 (pitches in bytes).
///
/// # Safety
/// The pointers are of the named memory types and hold their boxes.
unsafe fn memcpy2d(
    stream: &CudaStream,
    (dst, dst_type, dp): (*mut f32, sys::CUmemorytype, usize),
    (src, src_type, sp): (*const f32, sys::CUmemorytype, usize),
    (w, h): (usize, usize),
) -> Result<(), DriverError> {
    let host = |t| t == sys::CUmemorytype::CU_MEMORYTYPE_HOST;
    let c = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: src_type,
        srcHost: if host(src_type) {
            src.cast()
        } else {
            core::ptr::null()
        },
        srcDevice: if host(src_type) { 0 } else { src as u64 },
        srcArray: core::ptr::null_mut(),
        srcPitch: sp,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dst_type,
        dstHost: if host(dst_type) {
            dst.cast()
        } else {
            core::ptr::null_mut()
        },
        dstDevice: if host(dst_type) { 0 } else { dst as u64 },
        dstArray: core::ptr::null_mut(),
        dstPitch: dp,
        WidthInBytes: w * 4,
        Height: h,
    };
    // SAFETY: this function's contract.
    unsafe { sys::cuMemcpy2DAsync_v2(&c, stream.cu_stream()) }.result()
}

/// Host rows -> device rows (pageable source).
#[derivative_rule(copy2d, dst = device, src = host, autodiff)]
unsafe fn upload2d(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[dst_pitch] dp: usize,
    #[src] src: *const f32,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) -> Result<(), DriverError> {
    use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE as D, CU_MEMORYTYPE_HOST as H};
    // SAFETY: the rule's contract.
    unsafe { memcpy2d(stream, (dst, D, dp), (src, H, sp), (w, h)) }
}

/// Device rows -> host rows (pageable destination); waits.
#[derivative_rule(copy2d, dst = host, src = device, autodiff)]
unsafe fn download2d(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[dst_pitch] dp: usize,
    #[src] src: *const f32,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) -> Result<(), DriverError> {
    use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE as D, CU_MEMORYTYPE_HOST as H};
    // SAFETY: the rule's contract.
    unsafe { memcpy2d(stream, (dst, H, dp), (src, D, sp), (w, h))? };
    stream.synchronize()
}

/// `cuMemsetD32Async` of `n` elements of device memory from `at`.
#[derivative_rule(memset, dst = device, autodiff)]
unsafe fn set_device(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[len] n: usize,
    bits: u32,
) -> Result<(), DriverError> {
    // SAFETY: the rule's contract.
    unsafe { sys::cuMemsetD32Async(dst.add(at) as u64, bits, n, stream.cu_stream()).result() }
}

/// A fill of `n` elements from `at` with the value `v`, on pageable host memory.
#[derivative_rule(fill, dst = host, autodiff)]
unsafe fn host_fill(
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[len] n: usize,
    #[value] v: f32,
) {
    for i in 0..n {
        // SAFETY: the rule's contract.
        unsafe { dst.add(at + i).write(v) }
    }
}

/// `cuMemsetD32Async` of `n` elements of device memory from `at` to the value `v`.
#[derivative_rule(fill, dst = device, autodiff)]
unsafe fn fill_device(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[len] n: usize,
    #[value] v: f32,
) -> Result<(), DriverError> {
    // SAFETY: the rule's contract.
    unsafe {
        sys::cuMemsetD32Async(dst.add(at) as u64, v.to_bits(), n, stream.cu_stream()).result()
    }
}

/// A pitched 3D copy between pageable host boxes (`d` slices of `h` rows of `w` elements; rows
/// `dp` / `sp` bytes apart, slices `dsh` / `ssh` rows apart).
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy3d, dst = host, src = host, autodiff)]
unsafe fn host_copy3d(
    #[dst] dst: *mut f32,
    #[dst_pitch] dp: usize,
    #[dst_slice_height] dsh: usize,
    #[src] src: *const f32,
    #[src_pitch] sp: usize,
    #[src_slice_height] ssh: usize,
    #[width] w: usize,
    #[height] h: usize,
    #[depth] d: usize,
) {
    for z in 0..d {
        for r in 0..h {
            let (so, do_) = ((z * ssh + r) * sp / 4, (z * dsh + r) * dp / 4);
            // SAFETY: the rule's contract (each row of the boxes lies in its buffer).
            unsafe { core::ptr::copy_nonoverlapping(src.add(so), dst.add(do_), w) }
        }
    }
}

// ---- The differentiated functions ------------------------------------------------------------

/// The seed on host memory: to_host(to_device(x)) as two host copies.
#[autodiff_reverse(df_host, Duplicated, Active)]
fn f_host(x: &[f32; 3]) -> f32 {
    // Not zeros: a zeroing memset of a buffer only the opaque copies touch gives "Enzyme:
    // Cannot deduce type of memset" (nothing in `f_host` reads it as f32 before the copy).
    let mut m = [1.0f32; 3];
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut m, x, 3);
    host_copy_ad(&mut h, &m, 3);
    h.iter().map(|v| v * v).sum()
}

/// The seed on host memory again, in forward mode: Enzyme calls the bridges' forward rules
/// (`__enzyme_register_derivative_*`), which run the rule object's `forward`.
#[autodiff_forward(df_host_fwd, Dual, Dual)]
fn f_host_fwd(x: &[f32; 3]) -> f32 {
    let mut m = [1.0f32; 3];
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut m, x, 3);
    host_copy_ad(&mut h, &m, 3);
    h.iter().map(|v| v * v).sum()
}

/// The same in f64, through the generic rule's f64 bridge.
#[autodiff_reverse(df_host64, Duplicated, Active)]
fn f_host64(x: &[f64; 3]) -> f64 {
    let mut m = [1.0f64; 3];
    let mut h = [1.0f64; 3];
    host_copy_any_ad_f64(&mut m, x, 3);
    host_copy_any_ad_f64(&mut h, &m, 3);
    h.iter().map(|v| v * v).sum()
}

/// A misuse: four elements asked of three. The bridges refuse it (nothing is copied) and record
/// the error; `take_error` reports it.
#[autodiff_reverse(df_too_long, Duplicated, Active)]
fn f_too_long(x: &[f32; 3]) -> f32 {
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut h, x, 4);
    h.iter().map(|v| v * v).sum()
}

/// The seed: sum(abs2, to_host(to_device(x))), pageable host memory and a device buffer.
#[autodiff_reverse(df_seed, Duplicated, Duplicated, Active)]
fn f_seed(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    download_ad(&mut h, dev, 3);
    h.iter().map(|v| v * v).sum()
}

/// The seed in forward mode.
#[autodiff_forward(df_seed_fwd, Dual, Dual, Dual)]
fn f_seed_fwd(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    download_ad(&mut h, dev, 3);
    h.iter().map(|v| v * v).sum()
}

/// sum(abs2, to_host(copy_d2d(to_device(x)))).
#[autodiff_reverse(df_d2d, Duplicated, Duplicated, Duplicated, Active)]
fn f_d2d(x: &[f32; 3], a: &AdBuf<f32>, b: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(a, x, 3);
    copy_d2d_ad(b, a, 3);
    download_ad(&mut h, b, 3);
    h.iter().map(|v| v * v).sum()
}

/// sum(abs2, unpin(to_pinned(to_device(x)))): the download lands in pinned memory.
#[autodiff_reverse(df_pinned, Duplicated, Duplicated, Duplicated, Active)]
fn f_pinned(x: &[f32; 3], dev: &AdBuf<f32>, pin: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    download_pinned_ad(pin, dev, 3);
    unpin_ad(&mut h, pin, 3);
    h.iter().map(|v| v * v).sum()
}

/// sum(abs2, from_unified(to_unified(x))).
#[autodiff_reverse(df_unified, Duplicated, Duplicated, Active)]
fn f_unified(x: &[f32; 3], u: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    to_unified_ad(u, x, 3);
    from_unified_ad(&mut h, u, 3);
    h.iter().map(|v| v * v).sum()
}

/// The 2D box of `x` and `h`: 3 rows of 3 elements, rows 16 bytes (4 elements) apart; the
/// fourth element of each row is padding, which no copy may touch.
const PITCH_X: usize = 16;
const W: usize = 3;
const H: usize = 3;

/// The sum of squares of the box of a 3 × 4 pitched buffer (its padding left out).
fn box_sum_sq(h: &[f32; 12]) -> f32 {
    let mut y = 0.0;
    for r in 0..H {
        for c in 0..W {
            let v = h[r * (PITCH_X / 4) + c];
            y += v * v;
        }
    }
    y
}

/// The pitched round trip on host memory: x's box -> rows 20 bytes apart -> h's box.
#[autodiff_reverse(df_host2d, Duplicated, Active)]
fn f_host2d(x: &[f32; 12]) -> f32 {
    let mut m = [1.0f32; 15];
    let mut h = [1.0f32; 12];
    host_copy2d_ad(&mut m, 20, x, PITCH_X, W, H);
    host_copy2d_ad(&mut h, PITCH_X, &m, 20, W, H);
    box_sum_sq(&h)
}

/// A memset inside: h = copy(x), then h[0] <- 0: f = x1² + x2², dx = [0, 2 x1, 2 x2].
#[autodiff_reverse(df_host_set, Duplicated, Active)]
fn f_host_set(x: &[f32; 3]) -> f32 {
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut h, x, 3);
    host_set_ad(&mut h, 0, 1, 0);
    h.iter().map(|v| v * v).sum()
}

/// The pitched round trip through the device: x's box -> device rows 32 bytes apart -> h's box.
#[autodiff_reverse(df_dev2d, Duplicated, Duplicated, Active)]
fn f_dev2d(x: &[f32; 12], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 12];
    upload2d_ad(dev, 32, x, PITCH_X, W, H);
    download2d_ad(&mut h, PITCH_X, dev, 32, W, H);
    box_sum_sq(&h)
}

/// The seed with a device memset between the copies: dx = [0, 4, 6].
#[autodiff_reverse(df_dev_set, Duplicated, Duplicated, Active)]
fn f_dev_set(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    set_device_ad(dev, 0, 1, 0);
    download_ad(&mut h, dev, 3);
    h.iter().map(|v| v * v).sum()
}

/// A fill inside: h = copy(x), then h[1..3] <- a: f = x0² + 2a², dx = [2 x0, 0, 0], da = 4a.
/// `a` is an active float: Enzyme takes its derivative from the fill's reverse.
#[autodiff_reverse(df_host_fill, Duplicated, Active, Active)]
fn f_host_fill(x: &[f32; 3], a: f32) -> f32 {
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut h, x, 3);
    host_fill_ad(&mut h, 1, 2, a);
    h.iter().map(|v| v * v).sum()
}

/// The same in forward mode: the value's tangent reaches the filled elements.
#[autodiff_forward(df_host_fill_fwd, Dual, Dual, Dual)]
fn f_host_fill_fwd(x: &[f32; 3], a: f32) -> f32 {
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut h, x, 3);
    host_fill_ad(&mut h, 1, 2, a);
    h.iter().map(|v| v * v).sum()
}

/// The fill on the device, between the seed's copies.
#[autodiff_reverse(df_dev_fill, Duplicated, Duplicated, Active, Active)]
fn f_dev_fill(x: &[f32; 3], dev: &AdBuf<f32>, a: f32) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    fill_device_ad(dev, 1, 2, a);
    download_ad(&mut h, dev, 3);
    h.iter().map(|v| v * v).sum()
}

/// The 2D round trip in forward mode.
#[autodiff_forward(df_host2d_fwd, Dual, Dual)]
fn f_host2d_fwd(x: &[f32; 12]) -> f32 {
    let mut m = [1.0f32; 15];
    let mut h = [1.0f32; 12];
    host_copy2d_ad(&mut m, 20, x, PITCH_X, W, H);
    host_copy2d_ad(&mut h, PITCH_X, &m, 20, W, H);
    box_sum_sq(&h)
}

/// A 3D round trip on host memory: x is 2 slices of 2 rows of 3 elements, rows 16 bytes
/// apart, slices 2 rows apart (16 elements, a padding column); through a buffer with rows 12
/// bytes apart and slices 3 rows apart (a padding row per slice) back into h, laid out as x.
#[autodiff_reverse(df_host3d, Duplicated, Active)]
fn f_host3d(x: &[f32; 16]) -> f32 {
    let mut m = [1.0f32; 18];
    let mut h = [1.0f32; 16];
    host_copy3d_ad(&mut m, 12, 3, x, 16, 2, 3, 2, 2);
    host_copy3d_ad(&mut h, 16, 2, &m, 12, 3, 3, 2, 2);
    let mut y = 0.0;
    for (i, v) in h.iter().enumerate() {
        if i % 4 < 3 {
            y += v * v;
        }
    }
    y
}

/// A 2D misuse: x's rows read 20 bytes apart, so the box reaches element 13 of 12. Refused
/// before any row is read.
#[autodiff_reverse(df_2d_too_far, Duplicated, Active)]
fn f_2d_too_far(x: &[f32; 12]) -> f32 {
    let mut h = [1.0f32; 12];
    host_copy2d_ad(&mut h, PITCH_X, x, 20, W, H);
    box_sum_sq(&h)
}

// ---- Driver ----------------------------------------------------------------------------------

const X: [f32; 3] = [1.0, 2.0, 3.0];
const WANT: [f32; 3] = [2.0, 4.0, 6.0];

/// Bridge calls since `before`.
fn since(before: Calls) -> Calls {
    calls() - before
}

/// Reverse mode: `copies` augmented primals and reverses, nothing else.
fn reverse_calls(copies: usize) -> Calls {
    Calls {
        augmented_primal: copies,
        reverse: copies,
        ..Calls::default()
    }
}

fn report(name: &str, y: f32, dx: [f32; 3], c: Calls, copies: usize, extra: &str) -> bool {
    let err = take_error();
    let ok = y == 14.0 && dx == WANT && c == reverse_calls(copies) && err.is_none();
    println!(
        "{name}: f = {y}, dx = {dx:?} (want {WANT:?}), augmented primals = {}, reverses = {} (want {copies} each){extra}, error = {err:?} -> {}",
        c.augmented_primal,
        c.reverse,
        if ok { "OK" } else { "WRONG" }
    );
    ok
}

/// Forward mode: the gradient, one unit tangent at a time; `copies` forward rules per sweep.
fn report_fwd(name: &str, sweep: impl Fn(&[f32; 3]) -> (f32, f32), copies: usize) -> bool {
    let c0 = calls();
    let mut grad = [0.0f32; 3];
    let mut y = 0.0;
    for (i, g) in grad.iter_mut().enumerate() {
        let mut e = [0.0f32; 3];
        e[i] = 1.0;
        (y, *g) = sweep(&e);
    }
    let c = since(c0);
    let err = take_error();
    let want = Calls {
        forward: 3 * copies,
        ..Calls::default()
    };
    let ok = y == 14.0 && grad == WANT && c == want && err.is_none();
    println!(
        "{name}: f = {y}, (df.e1, df.e2, df.e3) = {grad:?} (want {WANT:?}), forward rules = {} (want {}), error = {err:?} -> {}",
        c.forward,
        3 * copies,
        if ok { "OK" } else { "WRONG" }
    );
    ok
}

/// The 2D input: a 3 × 3 box in rows of 4 elements, its padding 100 (f would see it if a copy
/// read padding), and the gradient: 2x in the box, 0 in the padding.
const X2: [f32; 12] = [1., 2., 3., 100., 4., 5., 6., 100., 7., 8., 9., 100.];
const WANT2: [f32; 12] = [2., 4., 6., 0., 8., 10., 12., 0., 14., 16., 18., 0.];
/// f(X2) = 1² + ... + 9².
const F2: f32 = 285.0;

/// A 2D (or memset) case: `f`, `dx` against their wants, the calls, no error.
fn report_any(
    name: &str,
    (y, want_y): (f32, f32),
    dx: &[f32],
    want: &[f32],
    c: Calls,
    copies: usize,
    extra: &str,
) -> bool {
    let err = take_error();
    let ok = y == want_y && dx == want && c == reverse_calls(copies) && err.is_none();
    println!(
        "{name}: f = {y} (want {want_y}), dx = {dx:?} (want {want:?}), augmented primals = {}, reverses = {} (want {copies} each){extra}, error = {err:?} -> {}",
        c.augmented_primal,
        c.reverse,
        if ok { "OK" } else { "WRONG" }
    );
    ok
}

fn run_host() -> bool {
    let c0 = calls();
    let mut dx = [0.0f32; 3];
    let y = df_host(&X, &mut dx, 1.0);
    let mut ok = report(
        "host   (pageable -> pageable -> pageable, f32)",
        y,
        dx,
        since(c0),
        2,
        "",
    );
    ok &= report_fwd("host forward mode", |e| df_host_fwd(&X, e), 2);

    let c0 = calls();
    let mut dx64 = [0.0f64; 3];
    let y64 = df_host64(&[1.0, 2.0, 3.0], &mut dx64, 1.0);
    let c = since(c0);
    let err = take_error();
    let ok64 = y64 == 14.0 && dx64 == [2.0, 4.0, 6.0] && c == reverse_calls(2) && err.is_none();
    println!(
        "host64 (the generic rule's f64 bridge): f = {y64}, dx = {dx64:?}, augmented primals = {}, reverses = {}, error = {err:?} -> {}",
        c.augmented_primal,
        c.reverse,
        if ok64 { "OK" } else { "WRONG" }
    );
    ok &= ok64;

    // Outside differentiation, `_ad` runs the primal bridge (through the rule's checks).
    let c0 = calls();
    let mut h = [0.0f32; 3];
    host_copy_ad(&mut h, &X, 3);
    let c = since(c0);
    let want = Calls {
        primal: 1,
        ..Calls::default()
    };
    let okp = h == X && c == want && take_error().is_none();
    println!(
        "primal (host_copy_ad outside autodiff): h = {h:?}, primal calls = {} -> {}",
        c.primal,
        if okp { "OK" } else { "WRONG" }
    );
    ok &= okp;

    // The pitched 2D round trip on host memory.
    let c0 = calls();
    let mut dx2 = [0.0f32; 12];
    let y = df_host2d(&X2, &mut dx2, 1.0);
    ok &= report_any(
        "host2d (pageable rows -> pageable rows -> pageable rows, pitches 16/20/16 B, 3x3 box)",
        (y, F2),
        &dx2,
        &WANT2,
        since(c0),
        2,
        "",
    );

    // The 2D round trip in forward mode: one unit tangent per element of x, padding included
    // (whose derivative is 0).
    let c0 = calls();
    let mut grad2 = [0.0f32; 12];
    let mut y = 0.0;
    for (i, g) in grad2.iter_mut().enumerate() {
        let mut e = [0.0f32; 12];
        e[i] = 1.0;
        (y, *g) = df_host2d_fwd(&X2, &e);
    }
    let c = since(c0);
    let err = take_error();
    let ok2f = y == F2
        && grad2 == WANT2
        && c == Calls {
            forward: 24,
            ..Calls::default()
        }
        && err.is_none();
    println!(
        "host2d forward mode: f = {y}, gradient = {grad2:?} (want {WANT2:?}), forward rules = {} (want 24), error = {err:?} -> {}",
        c.forward,
        if ok2f { "OK" } else { "WRONG" }
    );
    ok &= ok2f;

    // The 3D round trip: the box is x's elements whose index mod 4 is below 3.
    let x3: [f32; 16] = core::array::from_fn(|i| if i % 4 < 3 { (i + 1) as f32 } else { 100.0 });
    let want3: [f32; 16] =
        core::array::from_fn(|i| if i % 4 < 3 { 2.0 * (i + 1) as f32 } else { 0.0 });
    let f3: f32 = x3
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 4 < 3)
        .map(|(_, v)| v * v)
        .sum();
    let c0 = calls();
    let mut dx3 = [0.0f32; 16];
    let y = df_host3d(&x3, &mut dx3, 1.0);
    ok &= report_any(
        "host3d (pageable -> pageable -> pageable, 2 slices of 2 rows of 3, pitches 16/12/16 B, slice heights 2/3/2 rows)",
        (y, f3),
        &dx3,
        &want3,
        since(c0),
        2,
        "",
    );

    // A memset between: its reverse zeroes the cotangent of what it overwrote.
    let c0 = calls();
    let mut dx = [0.0f32; 3];
    let y = df_host_set(&X, &mut dx, 1.0);
    ok &= report_any(
        "host memset (copy, then h[0] <- 0)",
        (y, 13.0),
        &dx,
        &[0.0, 4.0, 6.0],
        since(c0),
        2,
        "",
    );

    // A fill with an active value: Enzyme gets d_a from the fill's reverse (d_v = sum of the
    // filled cotangents), and dx only where the fill did not overwrite.
    let c0 = calls();
    let mut dx = [0.0f32; 3];
    let (y, da) = df_host_fill(&X, &mut dx, 5.0, 1.0);
    let c = since(c0);
    ok &= report_any(
        "host fill (copy, then h[1..3] <- a = 5), reverse",
        (y, 51.0),
        &[dx[0], dx[1], dx[2], da],
        &[2.0, 0.0, 0.0, 20.0],
        c,
        2,
        " (dx then da)",
    );
    // Forward mode: tangents (e1, 0), (e2, 0), (e3, 0), (0, 1) give the same gradient.
    let c0 = calls();
    let mut grad = [0.0f32; 4];
    let mut y = 0.0;
    for (i, g) in grad.iter_mut().enumerate() {
        let mut e = [0.0f32; 3];
        let mut ea = 0.0;
        match i {
            3 => ea = 1.0,
            i => e[i] = 1.0,
        }
        (y, *g) = df_host_fill_fwd(&X, &e, 5.0, ea);
    }
    let c = since(c0);
    let err = take_error();
    let okf = y == 51.0
        && grad == [2.0, 0.0, 0.0, 20.0]
        && c == Calls {
            forward: 8,
            ..Calls::default()
        }
        && err.is_none();
    println!(
        "host fill forward mode: f = {y}, (df.e1, df.e2, df.e3, df.ea) = {grad:?} (want [2.0, 0.0, 0.0, 20.0]), forward rules = {} (want 8), error = {err:?} -> {}",
        c.forward,
        if okf { "OK" } else { "WRONG" }
    );
    ok &= okf;

    // The 2D misuse: refused, nothing read or differentiated.
    let c0 = calls();
    let mut dx2 = [0.0f32; 12];
    let y = df_2d_too_far(&X2, &mut dx2, 1.0);
    let c = since(c0);
    let err = take_error();
    let oke2 =
        dx2 == [0.0; 12] && c == reverse_calls(1) && err.as_ref().is_some_and(|(_, n)| *n == 2);
    match &err {
        Some((first, n)) => println!(
            "misuse 2d (source rows 20 B apart in 12 elements): f = {y}, dx = {dx2:?}, {n} errors, the first: {first} -> {}",
            if oke2 { "OK (refused)" } else { "WRONG" }
        ),
        None => println!("misuse 2d: f = {y}, dx = {dx2:?}, no error recorded -> WRONG"),
    }
    ok &= oke2;

    // The misuse: refused in the augmented primal, no tape for the reverse; dx stays zero.
    let c0 = calls();
    let mut dx = [0.0f32; 3];
    let y = df_too_long(&X, &mut dx, 1.0);
    let c = since(c0);
    let err = take_error();
    let oke = dx == [0.0; 3] && c == reverse_calls(1) && err.as_ref().is_some_and(|(_, n)| *n == 2);
    match &err {
        Some((first, n)) => println!(
            "misuse (n = 4 of 3): f = {y}, dx = {dx:?}, {n} errors, the first: {first} -> {}",
            if oke { "OK (refused)" } else { "WRONG" }
        ),
        None => println!("misuse (n = 4 of 3): f = {y}, dx = {dx:?}, no error recorded -> WRONG"),
    }
    ok & oke
}

fn run_gpu() -> Result<bool, Box<dyn std::error::Error>> {
    let s = rules_runtime::cuda::stream(0)?;
    println!("device: {}", s.context().name()?);
    let mut ok = true;

    // Seed: device + pageable.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pair = AdPair::new(&mut a, &mut da, &s)?;
            let (dev, ddev) = pair.split();
            df_seed(&X, &mut dx, dev, ddev, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (prim, shad) = (s.clone_dtoh(&a)?, s.clone_dtoh(&da)?);
        let extra = format!(", device primal = {prim:?}, device shadow after = {shad:?}");
        ok &= report(
            "seed   (pageable -> device -> pageable)",
            y,
            dx,
            c,
            2,
            &extra,
        ) && prim == X
            && shad == [0.0; 3];
    }
    // Seed in forward mode.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let mut pair = AdPair::new(&mut a, &mut da, &s)?;
        let (dev, ddev) = pair.split();
        let ddev: &AdBuf<f32> = ddev;
        ok &= report_fwd(
            "seed forward mode (pageable -> device -> pageable)",
            |e| df_seed_fwd(&X, e, dev, ddev),
            2,
        );
    }
    // Device -> device in the middle.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let (mut b, mut db) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pa = AdPair::new(&mut a, &mut da, &s)?;
            let mut pb = AdPair::new(&mut b, &mut db, &s)?;
            let (a, da) = pa.split();
            let (b, db) = pb.split();
            df_d2d(&X, &mut dx, a, da, b, db, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (sa, sb) = (s.clone_dtoh(&da)?, s.clone_dtoh(&db)?);
        let extra = format!(", device shadows after = {sa:?} {sb:?}");
        ok &= report(
            "d2d    (pageable -> device -> device -> pageable)",
            y,
            dx,
            c,
            3,
            &extra,
        ) && sa == [0.0; 3]
            && sb == [0.0; 3];
    }
    // Pinned.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        // SAFETY: f32 is valid for any bits; both are filled before use.
        let mut p = unsafe { s.context().alloc_pinned::<f32>(3)? };
        let mut dp = unsafe { s.context().alloc_pinned::<f32>(3)? };
        p.as_mut_slice()?.fill(0.0);
        dp.as_mut_slice()?.fill(0.0);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pa = AdPair::new(&mut a, &mut da, &s)?;
            let mut pp = AdPair::new(&mut p, &mut dp, &s)?;
            let (a, da) = pa.split();
            let (p, dpp) = pp.split();
            df_pinned(&X, &mut dx, a, da, p, dpp, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (shad, pshad) = (s.clone_dtoh(&da)?, dp.as_slice()?.to_vec());
        let extra = format!(", device shadow after = {shad:?}, pinned shadow after = {pshad:?}");
        ok &= report(
            "pinned (pageable -> device -> pinned -> pageable)",
            y,
            dx,
            c,
            3,
            &extra,
        ) && shad == [0.0; 3]
            && pshad == [0.0; 3];
    }
    // Unified.
    {
        // SAFETY: f32 is valid for any bits; both are filled before use.
        let mut u = unsafe { s.context().alloc_unified::<f32>(3, true)? };
        let mut du = unsafe { s.context().alloc_unified::<f32>(3, true)? };
        u.as_mut_slice()?.fill(0.0);
        du.as_mut_slice()?.fill(0.0);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pu = AdPair::new(&mut u, &mut du, &s)?;
            let (u, dup) = pu.split();
            df_unified(&X, &mut dx, u, dup, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let ushad = du.as_slice()?.to_vec();
        let extra = format!(", unified shadow after = {ushad:?}");
        ok &= report(
            "unified(pageable -> unified -> pageable)",
            y,
            dx,
            c,
            2,
            &extra,
        ) && ushad == [0.0; 3];
    }
    // The pitched 2D round trip through device memory: device rows 32 bytes (8 elements)
    // apart, the device primal's padding -1 and its shadow's padding 5 (neither may change).
    {
        let dev0: Vec<f32> = (0..24)
            .map(|i| if i % 8 < W { 0.0 } else { -1.0 })
            .collect();
        let sh0: Vec<f32> = (0..24).map(|i| if i % 8 < W { 0.0 } else { 5.0 }).collect();
        let (mut a, mut da) = (s.clone_htod(&dev0)?, s.clone_htod(&sh0)?);
        let c0 = calls();
        let mut dx2 = [0.0f32; 12];
        let y = {
            let mut pair = AdPair::new(&mut a, &mut da, &s)?;
            let (dev, ddev) = pair.split();
            df_dev2d(&X2, &mut dx2, dev, ddev, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (prim, shad) = (s.clone_dtoh(&a)?, s.clone_dtoh(&da)?);
        let want_prim: Vec<f32> = (0..24)
            .map(|i| {
                if i % 8 < W {
                    X2[(i / 8) * 4 + i % 8]
                } else {
                    -1.0
                }
            })
            .collect();
        let extra = format!(", device rows after = {prim:?}, device shadow after = {shad:?}");
        ok &= report_any(
            "dev2d  (pageable rows -> device rows -> pageable rows, pitches 16/32/16 B, 3x3 box)",
            (y, F2),
            &dx2,
            &WANT2,
            c,
            2,
            &extra,
        ) && prim == want_prim
            && shad == sh0;
    }
    // A device memset between the seed's copies.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pair = AdPair::new(&mut a, &mut da, &s)?;
            let (dev, ddev) = pair.split();
            df_dev_set(&X, &mut dx, dev, ddev, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (prim, shad) = (s.clone_dtoh(&a)?, s.clone_dtoh(&da)?);
        let extra = format!(", device primal = {prim:?}, device shadow after = {shad:?}");
        ok &= report_any(
            "dev memset (pageable -> device, dev[0] <- 0 -> pageable)",
            (y, 13.0),
            &dx,
            &[0.0, 4.0, 6.0],
            c,
            3,
            &extra,
        ) && prim == [0.0, 2.0, 3.0]
            && shad == [0.0; 3];
    }
    // A device fill with an active value between the seed's copies.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let (y, dv) = {
            let mut pair = AdPair::new(&mut a, &mut da, &s)?;
            let (dev, ddev) = pair.split();
            df_dev_fill(&X, &mut dx, dev, ddev, 5.0, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (prim, shad) = (s.clone_dtoh(&a)?, s.clone_dtoh(&da)?);
        let extra = format!(", device primal = {prim:?}, device shadow after = {shad:?}");
        ok &= report_any(
            "dev fill (pageable -> device, dev[1..3] <- a = 5 -> pageable), reverse",
            (y, 51.0),
            &[dx[0], dx[1], dx[2], dv],
            &[2.0, 0.0, 0.0, 20.0],
            c,
            3,
            &extra,
        ) && prim == [1.0, 5.0, 5.0]
            && shad == [0.0; 3];
    }
    // A handle of the wrong kind: a device buffer where the rule declares unified memory.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let mut dx = [0.0f32; 3];
        let c0 = calls();
        let y = {
            let mut pa = AdPair::new(&mut a, &mut da, &s)?;
            let (a, da) = pa.split();
            df_unified(&X, &mut dx, a, da, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let err = take_error();
        let oke = dx == [0.0; 3] && err.is_some() && c.augmented_primal == 2;
        match &err {
            Some((first, n)) => println!(
                "misuse (device handle for unified memory): f = {y}, dx = {dx:?}, {n} errors, the first: {first} -> {}",
                if oke { "OK (refused)" } else { "WRONG" }
            ),
            None => println!("misuse (device handle for unified memory): no error -> WRONG"),
        }
        ok &= oke;
    }
    Ok(ok)
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let mut ok = run_host();
    if which != "host" {
        if rules_runtime::cuda::driver_available() {
            match run_gpu() {
                Ok(g) => ok &= g,
                Err(e) => {
                    println!("GPU cases failed: {e}");
                    ok = false;
                }
            }
        } else {
            println!("GPU cases SKIPPED: no CUDA driver on this machine");
        }
    }
    println!("{}", if ok { "ALL OK" } else { "SOME WRONG" });
    std::process::exit(if ok { 0 } else { 1 });
}
