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
