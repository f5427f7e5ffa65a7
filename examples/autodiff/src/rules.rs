//! The copy primitives, annotated: each `#[derivative_rule(.., autodiff)]` also generates
//! `<name>_ad`, the safe function the differentiated functions call (and the bridges behind it).
use rules_runtime::cudarc::driver::{CudaStream, DriverError, sys};
use rules_runtime::memory::array::{ArrayElement, CudaArray};
use rules_runtime::memory::linear::{self, Linear};
use rules_runtime::prelude::*;
use std::sync::Arc;

/// Host -> host: the GPU-free stand-in for both copies of the seed.
#[derivative_rule(copy, dst = host, src = host, autodiff)]
pub(crate) unsafe fn host_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract (valid, non-overlapping ranges of `n` elements).
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// The same for any element type: `autodiff(f32, f64)` bridges each (`host_copy_any_ad_f64`).
#[derivative_rule(copy, dst = host, src = host, autodiff(f32, f64))]
pub(crate) unsafe fn host_copy_any<T: Differentiable>(
    #[dst] dst: *mut T,
    #[src] src: *const T,
    #[len] n: usize,
) {
    // SAFETY: as above.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// Host -> device (pageable source).
#[derivative_rule(copy, dst = device, src = host, autodiff)]
pub(crate) unsafe fn upload(
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
pub(crate) unsafe fn download(
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
pub(crate) unsafe fn copy_d2d(
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
pub(crate) unsafe fn download_pinned(
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
pub(crate) unsafe fn unpin(
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
pub(crate) unsafe fn to_unified(
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
pub(crate) unsafe fn from_unified(
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
pub(crate) unsafe fn host_copy2d(
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
pub(crate) unsafe fn host_set(
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[len] n: usize,
    #[value] bits: u32,
) {
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
pub(crate) unsafe fn upload2d(
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
pub(crate) unsafe fn download2d(
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
pub(crate) unsafe fn set_device(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[len] n: usize,
    #[value] bits: u32,
) -> Result<(), DriverError> {
    // SAFETY: the rule's contract.
    unsafe { sys::cuMemsetD32Async(dst.add(at) as u64, bits, n, stream.cu_stream()).result() }
}

/// A fill of `n` elements from `at` with the value `v`, on pageable host memory.
#[derivative_rule(fill, dst = host, autodiff)]
pub(crate) unsafe fn host_fill(
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
pub(crate) unsafe fn fill_device(
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
pub(crate) unsafe fn host_copy3d(
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

/// Pageable host memory -> a whole 1-D CUDA array (a `copy` with an array side: the rule takes
/// references; the bridge gets the array as an `AdArray` handle, the slice as a slice).
#[derivative_rule(copy, autodiff)]
pub(crate) fn upload_array(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[src] src: &[f32],
) -> rules_runtime::Result<()> {
    let (w, h, d) = dst.extent();
    linear::whole_array(src.len(), (w, h, d)).map_err(rules_runtime::Error::primal)?;
    linear::linear_to_array(stream, dst, (0, 0, 0), src, (w * 4, h), (w, h, d))
}

/// A whole CUDA array -> pageable host memory.
#[derivative_rule(copy, autodiff)]
pub(crate) fn download_array(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &CudaArray<f32>,
) -> rules_runtime::Result<()> {
    let (w, h, d) = src.extent();
    linear::whole_array(dst.len(), (w, h, d)).map_err(rules_runtime::Error::primal)?;
    linear::array_to_linear(stream, dst, (w * 4, h), src, (0, 0, 0), (w, h, d))
}

/// Pageable host rows -> a 2-D box of an array at `(x, y)`.
#[derivative_rule(copy2d, autodiff)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn rows_to_array(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src] src: &[f32],
    #[src_pitch] pitch: usize,
    #[width] w: usize,
    #[height] h: usize,
) -> rules_runtime::Result<()> {
    linear::linear_to_array(stream, dst, (x, y, 0), src, (pitch, h), (w, h, 1))
}

/// A 2-D box of an array -> rows of linear memory of any kind: generic over `Linear`, so the
/// bridge passes a `RawShadow<f32>` made from an `AdBuf` handle (device memory below).
#[derivative_rule(copy2d, autodiff(f32))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn array_to_rows<T: ArrayElement, L: Linear<Elem = T> + ?Sized>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut L,
    #[dst_pitch] pitch: usize,
    #[src] src: &CudaArray<T>,
    #[src_x] x: usize,
    #[src_y] y: usize,
    #[width] w: usize,
    #[height] h: usize,
) -> rules_runtime::Result<()> {
    linear::array_to_linear(stream, dst, (pitch, h), src, (x, y, 0), (w, h, 1))
}

/// `n` elements of a 1-D array from `at` <- `v` (staged through host memory).
fn set_run(
    stream: &CudaStream,
    dst: &mut CudaArray<f32>,
    at: usize,
    n: usize,
    v: f32,
) -> rules_runtime::Result<()> {
    let src = vec![v; n];
    linear::linear_to_array(stream, dst, (at, 0, 0), &src[..], (n * 4, 1), (n, 1, 1))
}

/// A memset of a run of a 1-D array (rows placed by `#[dst_x]`, `#[dst_y]`).
#[derivative_rule(memset, autodiff)]
pub(crate) fn zero_array_run(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[width] n: usize,
    #[height] h: usize,
) -> rules_runtime::Result<()> {
    let _ = (y, h); // a 1-D array: row 0, one row (the rule checks the box against the array)
    set_run(stream, dst, x, n, 0.0)
}

/// A fill of a run of a 1-D array with `v`.
#[derivative_rule(fill, autodiff)]
pub(crate) fn fill_array_run(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[value] v: f32,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[width] n: usize,
    #[height] h: usize,
) -> rules_runtime::Result<()> {
    let _ = (y, h);
    set_run(stream, dst, x, n, v)
}
