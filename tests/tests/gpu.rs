//! GPU suite: the generated rules on device, unified, pinned and pageable memory.
//!
//! Every test here is `#[ignore]`d so that a machine without a GPU reports it as *ignored*
//! (skipped), never as passed. On a GPU machine run `cargo test -- --include-ignored`; there, a
//! missing driver or device is a failure, not a skip.

use half::{bf16, f16};
use num_complex::Complex;
use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError, PinnedHostSlice, UnifiedSlice, sys,
};
use rules_runtime::testing::{adjoint_check, random_vec};
use rules_runtime::{Const, Differentiable, Duplicated, Error, derivative_rule};
use rules_runtime::{CopyRule, RawCopyRule};
use rules_tests::{download_rule, upload_rule};
use std::sync::Arc;

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

// ---- Copy primitives, as a user writes them -------------------------------------------------
// (`upload` and `download`, host ↔ device, are the crate library's.)

/// Host → unified.
#[derivative_rule(copy)]
fn upload_unified(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut UnifiedSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    stream.memcpy_htod(src, dst)
}

/// Unified → host.
#[derivative_rule(copy)]
fn download_unified(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &UnifiedSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtoh(src, dst)
}

/// Pageable → pinned (a host copy, after the stream's pending work on the buffer).
#[derivative_rule(copy)]
fn to_pinned(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut PinnedHostSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    stream.synchronize()?;
    dst.as_mut_slice()?.copy_from_slice(src);
    Ok(())
}

/// Pinned → pageable.
#[derivative_rule(copy)]
fn from_pinned(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &PinnedHostSlice<f32>,
) -> Result<(), DriverError> {
    stream.synchronize()?;
    dst.copy_from_slice(src.as_slice()?);
    Ok(())
}

/// Pageable → pageable `Vec`, on a stream (the shadow work stays on the host).
#[derivative_rule(copy)]
#[allow(clippy::ptr_arg)]
fn to_vec_on(stream: &Arc<CudaStream>, #[dst] dst: &mut Vec<f32>, #[src] src: &[f32]) {
    let _ = stream;
    dst.copy_from_slice(src);
}

/// Pageable `Vec` → pageable, on a stream.
#[allow(clippy::ptr_arg)]
#[derivative_rule(copy)]
fn from_vec_on(stream: &Arc<CudaStream>, #[dst] dst: &mut [f32], #[src] src: &Vec<f32>) {
    let _ = stream;
    dst.copy_from_slice(src);
}

/// Device → device at element offsets, any element type: raw device pointers.
#[derivative_rule(copy, dst = device, src = device)]
unsafe fn copy_d2d<T>(
    stream: &CudaStream,
    #[dst] dst: *mut T,
    #[dst_offset] doff: usize,
    #[src] src: *const T,
    #[src_offset] soff: usize,
    #[len] n: usize,
) -> Result<(), DriverError> {
    let size = size_of::<T>();
    let (d, s) = (
        dst as u64 + (doff * size) as u64,
        src as u64 + (soff * size) as u64,
    );
    unsafe { sys::cuMemcpyDtoDAsync_v2(d, s, n * size, stream.cu_stream()).result() }
}

/// Host → device, raw pointers, complex data.
#[derivative_rule(copy, dst = device, src = host)]
unsafe fn copy_h2d(
    stream: &CudaStream,
    #[dst] dst: *mut Complex<f64>,
    #[src] src: *const Complex<f64>,
    #[len] n: usize,
) -> Result<(), DriverError> {
    let bytes = n * size_of::<Complex<f64>>();
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst as u64, src.cast(), bytes, stream.cu_stream()).result() }
}

/// Device → host, raw pointers, complex data.
#[derivative_rule(copy, dst = host, src = device)]
unsafe fn copy_d2h(
    stream: &CudaStream,
    #[dst] dst: *mut Complex<f64>,
    #[src] src: *const Complex<f64>,
    #[len] n: usize,
) -> Result<(), DriverError> {
    let bytes = n * size_of::<Complex<f64>>();
    unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst.cast(), src as u64, bytes, stream.cu_stream()).result()?;
    }
    stream.synchronize()
}

// ---- Helpers ---------------------------------------------------------------------------------

fn dptr<T>(s: &Arc<CudaStream>, buf: &mut CudaSlice<T>) -> *mut T {
    let (p, _sync) = buf.device_ptr_mut(s);
    p as *mut T
}

fn to_vec<T: rules_runtime::cudarc::driver::DeviceRepr + Default + Clone>(
    s: &Arc<CudaStream>,
    buf: &CudaSlice<T>,
) -> Vec<T> {
    s.clone_dtoh(buf).unwrap()
}

fn pinned(s: &Arc<CudaStream>, n: usize) -> PinnedHostSlice<f32> {
    let mut p = unsafe { s.context().alloc_pinned::<f32>(n) }.unwrap();
    p.as_mut_slice().unwrap().fill(0.0);
    p
}

fn unified(s: &Arc<CudaStream>, n: usize) -> UnifiedSlice<f32> {
    let mut u = unsafe { s.context().alloc_unified::<f32>(n, true) }.unwrap();
    u.as_mut_slice().unwrap().fill(0.0);
    u
}

fn dev_f32(s: &Arc<CudaStream>, n: usize) -> CudaSlice<f32> {
    s.alloc_zeros::<f32>(n).unwrap()
}

fn pageable(_: &Arc<CudaStream>, n: usize) -> Vec<f32> {
    vec![0.0; n]
}

// ---- The seed's round trip: sum(abs2, to_host(to_device(x))) → dx == 2x ----------------------

macro_rules! round_trip {
    ($name:ident, $alloc:ident, $up:ident, $down:ident) => {
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $name() {
            paste_round_trip!($alloc, $up, $down);
        }
    };
}

macro_rules! paste_round_trip {
    ($alloc:ident, $up:ident, $down:ident) => {{
        let s = gpu();
        let x = [1.0f32, 2.0, 3.0];
        let n = x.len();
        let (mut mid, mut y) = ($alloc(&s, n), vec![0.0f32; n]);

        // Reverse, width 1.
        let (mut dmid, mut dy, mut dx) = ($alloc(&s, n), vec![0.0f32; n], vec![0.0f32; n]);
        let t1 = rule_of!($up)(&s)
            .augmented_primal(
                Duplicated::new(&mut mid, &mut dmid),
                Duplicated::new(&x[..], &mut dx[..]),
            )
            .unwrap();
        let t2 = rule_of!($down)(&s)
            .augmented_primal(
                Duplicated::new(&mut y[..], &mut dy[..]),
                Duplicated::new(&mid, &mut dmid),
            )
            .unwrap();
        assert_eq!(y, x, "the primal round trip");
        for (g, v) in dy.iter_mut().zip(&y) {
            *g += 2.0 * v;
        }
        rule_of!($down)(&s)
            .reverse(
                t2,
                Duplicated::new(&mut y[..], &mut dy[..]),
                Duplicated::new(&mid, &mut dmid),
            )
            .unwrap();
        rule_of!($up)(&s)
            .reverse(
                t1,
                Duplicated::new(&mut mid, &mut dmid),
                Duplicated::new(&x[..], &mut dx[..]),
            )
            .unwrap();
        s.synchronize().unwrap();
        assert_eq!(dx, [2.0, 4.0, 6.0], "reverse, width 1");
        assert_eq!(dy, [0.0; 3], "the cotangent of y is consumed");

        // Reverse, width 3: lane k is seeded with (k + 1) · 2y.
        let mut dm: Vec<_> = (0..3).map(|_| $alloc(&s, n)).collect();
        let mut dys = vec![vec![0.0f32; n]; 3];
        let mut dxs = vec![vec![0.0f32; n]; 3];
        {
            let [m0, m1, m2] = &mut dm[..] else {
                unreachable!()
            };
            let [y0, y1, y2] = &mut dys[..] else {
                unreachable!()
            };
            let [x0, x1, x2] = &mut dxs[..] else {
                unreachable!()
            };
            let t1 = rule_of!($up)(&s)
                .augmented_primal(
                    Duplicated::batch(&mut mid, [&mut *m0, &mut *m1, &mut *m2]),
                    Duplicated::batch(&x[..], [&mut x0[..], &mut x1[..], &mut x2[..]]),
                )
                .unwrap();
            let t2 = rule_of!($down)(&s)
                .augmented_primal(
                    Duplicated::batch(&mut y[..], [&mut y0[..], &mut y1[..], &mut y2[..]]),
                    Duplicated::batch(&mid, [&mut *m0, &mut *m1, &mut *m2]),
                )
                .unwrap();
            for (k, lane) in [&mut *y0, &mut *y1, &mut *y2].into_iter().enumerate() {
                for (g, v) in lane.iter_mut().zip(&y) {
                    *g = (k as f32 + 1.0) * 2.0 * v;
                }
            }
            rule_of!($down)(&s)
                .reverse(
                    t2,
                    Duplicated::batch(&mut y[..], [&mut y0[..], &mut y1[..], &mut y2[..]]),
                    Duplicated::batch(&mid, [&mut *m0, &mut *m1, &mut *m2]),
                )
                .unwrap();
            rule_of!($up)(&s)
                .reverse(
                    t1,
                    Duplicated::batch(&mut mid, [&mut *m0, &mut *m1, &mut *m2]),
                    Duplicated::batch(&x[..], [&mut x0[..], &mut x1[..], &mut x2[..]]),
                )
                .unwrap();
        }
        s.synchronize().unwrap();
        for (k, lane) in dxs.iter().enumerate() {
            let expected: Vec<f32> = x.iter().map(|v| (k as f32 + 1.0) * 2.0 * v).collect();
            assert_eq!(lane, &expected, "reverse, width 3, lane {k}");
        }

        // Forward, width 3: tangent lanes e0, e1, e2 give df/dx_k = Σ 2 y · dy_k = 2 x_k.
        let mut tx = vec![vec![0.0f32; n]; 3];
        for k in 0..3 {
            tx[k][k] = 1.0;
        }
        let mut dm: Vec<_> = (0..3).map(|_| $alloc(&s, n)).collect();
        let mut ty = vec![vec![0.0f32; n]; 3];
        {
            let [m0, m1, m2] = &mut dm[..] else {
                unreachable!()
            };
            let [x0, x1, x2] = &mut tx[..] else {
                unreachable!()
            };
            let [y0, y1, y2] = &mut ty[..] else {
                unreachable!()
            };
            rule_of!($up)(&s)
                .forward(
                    Duplicated::batch(&mut mid, [&mut *m0, &mut *m1, &mut *m2]),
                    Duplicated::batch(&x[..], [&mut x0[..], &mut x1[..], &mut x2[..]]),
                )
                .unwrap();
            rule_of!($down)(&s)
                .forward(
                    Duplicated::batch(&mut y[..], [&mut y0[..], &mut y1[..], &mut y2[..]]),
                    Duplicated::batch(&mid, [&mut *m0, &mut *m1, &mut *m2]),
                )
                .unwrap();
        }
        s.synchronize().unwrap();
        let grad: Vec<f32> = ty
            .iter()
            .map(|t| t.iter().zip(&y).map(|(a, b)| 2.0 * a * b).sum())
            .collect();
        assert_eq!(grad, [2.0, 4.0, 6.0], "forward, width 3");

        // Forward, width 1, direction x: df = 2 |x|² = 28.
        let (mut dmid, mut ty1, mut tx1) = ($alloc(&s, n), vec![0.0f32; n], x.to_vec());
        rule_of!($up)(&s)
            .forward(
                Duplicated::new(&mut mid, &mut dmid),
                Duplicated::new(&x[..], &mut tx1[..]),
            )
            .unwrap();
        rule_of!($down)(&s)
            .forward(
                Duplicated::new(&mut y[..], &mut ty1[..]),
                Duplicated::new(&mid, &mut dmid),
            )
            .unwrap();
        s.synchronize().unwrap();
        let df: f32 = ty1.iter().zip(&y).map(|(a, b)| 2.0 * a * b).sum();
        assert_eq!(df, 28.0, "forward, width 1");
    }};
}

/// The generated rule object, by primitive.
macro_rules! rule_of {
    (upload) => {
        upload_rule
    };
    (download) => {
        download_rule
    };
    (upload_unified) => {
        upload_unified_rule
    };
    (download_unified) => {
        download_unified_rule
    };
    (to_pinned) => {
        to_pinned_rule
    };
    (from_pinned) => {
        from_pinned_rule
    };
    (to_vec_on) => {
        to_vec_on_rule
    };
    (from_vec_on) => {
        from_vec_on_rule
    };
}

round_trip!(seed_round_trip_device, dev_f32, upload, download);
round_trip!(
    seed_round_trip_unified,
    unified,
    upload_unified,
    download_unified
);
round_trip!(seed_round_trip_pinned, pinned, to_pinned, from_pinned);
round_trip!(seed_round_trip_pageable, pageable, to_vec_on, from_vec_on);

// ---- Preloaded shadows, complex data, Const sources -------------------------------------------

fn c(re: f64, im: f64) -> Complex<f64> {
    Complex::new(re, im)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn complex_d2d_h2d_d2h_accumulate_into_preloaded_shadows() {
    let s = gpu();
    let n = 5;
    let prior: Vec<Complex<f64>> = (0..n).map(|i| c(i as f64, -(i as f64))).collect();
    let seed: Vec<Complex<f64>> = (0..n).map(|i| c(0.5 + i as f64, 2.0)).collect();
    let expected: Vec<Complex<f64>> = prior.iter().zip(&seed).map(|(a, b)| a + b).collect();
    let cplx = |v: &[Complex<f64>]| -> Vec<f64> { v.iter().flat_map(|z| [z.re, z.im]).collect() };
    let back = |v: &[f64]| -> Vec<Complex<f64>> { v.chunks(2).map(|p| c(p[0], p[1])).collect() };

    // Device → device.
    let mut x = s
        .clone_htod(&cplx(&random_vec::<Complex<f64>>(n, 1)))
        .unwrap();
    let mut y = s.alloc_zeros::<f64>(2 * n).unwrap();
    let mut dx = s.clone_htod(&cplx(&prior)).unwrap();
    let mut dy = s.clone_htod(&cplx(&seed)).unwrap();
    let (px, py, pdx, pdy) = (
        dptr(&s, &mut x),
        dptr(&s, &mut y),
        dptr(&s, &mut dx),
        dptr(&s, &mut dy),
    );
    let (px, py, pdx, pdy) = (px.cast::<Complex<f64>>(), py.cast(), pdx.cast(), pdy.cast());
    unsafe {
        let t = copy_d2d_rule(&s, 0, 0, n)
            .augmented_primal(
                Duplicated::new(py, pdy),
                Duplicated::new(px as *const _, pdx),
            )
            .unwrap();
        copy_d2d_rule(&s, 0, 0, n)
            .reverse(
                t,
                Duplicated::new(py, pdy),
                Duplicated::new(px as *const _, pdx),
            )
            .unwrap();
    }
    assert_eq!(
        back(&to_vec(&s, &dx)),
        expected,
        "d2d: d_src == prior + seed"
    );
    assert_eq!(to_vec(&s, &dy), vec![0.0; 2 * n], "d2d: d_dst == 0");
    assert_eq!(to_vec(&s, &y), to_vec(&s, &x), "d2d: the primal copy ran");

    // Host → device.
    let hx: Vec<Complex<f64>> = random_vec(n, 2);
    let mut hdx = prior.clone();
    let mut dy = s.clone_htod(&cplx(&seed)).unwrap();
    let pdy = dptr(&s, &mut dy).cast::<Complex<f64>>();
    unsafe {
        let t = copy_h2d_rule(&s, n)
            .augmented_primal(
                Duplicated::new(py, pdy),
                Duplicated::new(hx.as_ptr(), hdx.as_mut_ptr()),
            )
            .unwrap();
        copy_h2d_rule(&s, n)
            .reverse(
                t,
                Duplicated::new(py, pdy),
                Duplicated::new(hx.as_ptr(), hdx.as_mut_ptr()),
            )
            .unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(hdx, expected, "h2d: d_src == prior + seed");
    assert_eq!(to_vec(&s, &dy), vec![0.0; 2 * n], "h2d: d_dst == 0");
    assert_eq!(back(&to_vec(&s, &y)), hx, "h2d: the primal copy ran");

    // Device → host.
    let mut hy = vec![c(0.0, 0.0); n];
    let mut hdy = seed.clone();
    let mut dx = s.clone_htod(&cplx(&prior)).unwrap();
    let pdx = dptr(&s, &mut dx).cast::<Complex<f64>>();
    unsafe {
        let t = copy_d2h_rule(&s, n)
            .augmented_primal(
                Duplicated::new(hy.as_mut_ptr(), hdy.as_mut_ptr()),
                Duplicated::new(px as *const _, pdx),
            )
            .unwrap();
        copy_d2h_rule(&s, n)
            .reverse(
                t,
                Duplicated::new(hy.as_mut_ptr(), hdy.as_mut_ptr()),
                Duplicated::new(px as *const _, pdx),
            )
            .unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(
        back(&to_vec(&s, &dx)),
        expected,
        "d2h: d_src == prior + seed"
    );
    assert_eq!(hdy, vec![c(0.0, 0.0); n], "d2h: d_dst == 0");
    assert_eq!(hy, back(&to_vec(&s, &x)), "d2h: the primal copy ran");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn const_source_zeroes_the_device_destination_shadow() {
    let s = gpu();
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let mut y = dev_f32(&s, 4);
    let mut dy = s.clone_htod(&[9.0f32; 4]).unwrap();
    upload_rule(&s)
        .forward(Duplicated::new(&mut y, &mut dy), Const(&x[..]))
        .unwrap();
    assert_eq!(to_vec(&s, &dy), [0.0; 4], "forward: d_dst ← 0");
    assert_eq!(to_vec(&s, &y), x, "forward: the primal copy ran");
    let mut dy = s.clone_htod(&[9.0f32; 4]).unwrap();
    let t = upload_rule(&s)
        .augmented_primal(Duplicated::new(&mut y, &mut dy), Const(&x[..]))
        .unwrap();
    upload_rule(&s)
        .reverse(t, Duplicated::new(&mut y, &mut dy), Const(&x[..]))
        .unwrap();
    assert_eq!(to_vec(&s, &dy), [0.0; 4], "reverse: d_dst ← 0");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn self_copy_keeps_its_cotangent_and_partial_overlap_is_refused_on_device() {
    let s = gpu();
    let mut buf = s.clone_htod(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let mut dbuf = s
        .clone_htod(&[10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0])
        .unwrap();
    let (p, dp) = (dptr(&s, &mut buf), dptr(&s, &mut dbuf));
    unsafe {
        let t = copy_d2d_rule(&s, 1, 1, 4)
            .augmented_primal(Duplicated::new(p, dp), Duplicated::new(p as *const f32, dp))
            .unwrap();
        copy_d2d_rule(&s, 1, 1, 4)
            .reverse(
                t,
                Duplicated::new(p, dp),
                Duplicated::new(p as *const f32, dp),
            )
            .unwrap();
    }
    assert_eq!(
        to_vec(&s, &dbuf),
        [10.0, 20.0, 30.0, 40.0, 50.0, 60.0],
        "self-copy: cotangent kept"
    );
    let e = unsafe {
        copy_d2d_rule(&s, 2, 0, 4)
            .forward(Duplicated::new(p, dp), Duplicated::new(p as *const f32, dp))
    }
    .unwrap_err();
    assert!(matches!(e, Error::PartialOverlap { .. }), "{e}");
    // A tape of an exact self-copy (which changes nothing); the overlap is refused before the
    // tape is looked at.
    let t =
        unsafe { copy_d2d_rule(&s, 1, 1, 4).augmented_primal(Const(p), Const(p as *const f32)) }
            .unwrap();
    let e = unsafe {
        copy_d2d_rule(&s, 2, 0, 4).reverse(
            t,
            Duplicated::new(p, dp),
            Duplicated::new(p as *const f32, dp),
        )
    }
    .unwrap_err();
    assert!(matches!(e, Error::PartialOverlap { .. }), "{e}");
    assert_eq!(
        to_vec(&s, &buf),
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        "refused: primal unchanged"
    );
    assert_eq!(
        to_vec(&s, &dbuf),
        [10.0, 20.0, 30.0, 40.0, 50.0, 60.0],
        "refused: shadow unchanged"
    );
}

// ---- Adjoint checks on device buffers, every dtype, random sizes and offsets ------------------

fn device_adjoint<T>(s: &Arc<CudaStream>, n: usize, doff: usize, soff: usize, seed: u64)
where
    T: Differentiable,
{
    // T's bytes, as f64 words or u16 words; every supported T is a whole number of u16s.
    let words = size_of::<T>() / 2;
    let pad = 3;
    let as_u16 = |v: &[T]| -> Vec<u16> {
        v.iter()
            .flat_map(|x| {
                unsafe { core::slice::from_raw_parts((x as *const T).cast::<u16>(), words) }
                    .to_vec()
            })
            .collect()
    };
    let from_u16 = |v: &[u16]| -> Vec<T> {
        v.chunks(words)
            .map(|w| unsafe { core::ptr::read_unaligned(w.as_ptr().cast::<T>()) })
            .collect()
    };
    let fill = |len: usize, seed: u64| -> CudaSlice<u16> {
        s.clone_htod(&as_u16(&random_vec::<T>(len, seed))).unwrap()
    };
    let mut x = fill(soff + n + pad, seed);
    let mut y = fill(doff + n + pad, seed + 1);
    let ptr = |b: &mut CudaSlice<u16>| dptr(s, b).cast::<T>();
    let (px, py) = (ptr(&mut x) as *const T, ptr(&mut y));
    let region = |b: &CudaSlice<u16>, off: usize| -> Vec<T> {
        from_u16(&to_vec(s, b))[off..off + n].to_vec()
    };
    let outside = |b: &CudaSlice<u16>, off: usize| -> Vec<u16> {
        let all = to_vec(s, b);
        [&all[..off * words], &all[(off + n) * words..]].concat()
    };
    let jvp = |v: &[T]| -> Result<Vec<T>, Error> {
        let (mut dx, mut dy) = (
            fill(soff + n + pad, seed + 2),
            fill(doff + n + pad, seed + 3),
        );
        let mut host = from_u16(&to_vec(s, &dx));
        host[soff..soff + n].copy_from_slice(v);
        s.memcpy_htod(&as_u16(&host), &mut dx).unwrap();
        let before = outside(&dy, doff);
        unsafe {
            copy_d2d_rule(s, doff, soff, n).forward(
                Duplicated::new(py, ptr(&mut dy)),
                Duplicated::new(px, ptr(&mut dx)),
            )?
        };
        assert_eq!(
            outside(&dy, doff),
            before,
            "forward wrote outside its range"
        );
        Ok(region(&dy, doff))
    };
    let vjp = |w: &[T]| -> Result<Vec<T>, Error> {
        let (mut dx, mut dy) = (
            fill(soff + n + pad, seed + 4),
            fill(doff + n + pad, seed + 5),
        );
        let mut host = from_u16(&to_vec(s, &dx));
        host[soff..soff + n].fill(T::zero());
        s.memcpy_htod(&as_u16(&host), &mut dx).unwrap();
        let mut host = from_u16(&to_vec(s, &dy));
        host[doff..doff + n].copy_from_slice(w);
        s.memcpy_htod(&as_u16(&host), &mut dy).unwrap();
        let (before_x, before_y) = (outside(&dx, soff), outside(&dy, doff));
        let (pdy, pdx) = (ptr(&mut dy), ptr(&mut dx));
        unsafe {
            let t = copy_d2d_rule(s, doff, soff, n)
                .augmented_primal(Duplicated::new(py, pdy), Duplicated::new(px, pdx))?;
            copy_d2d_rule(s, doff, soff, n).reverse(
                t,
                Duplicated::new(py, pdy),
                Duplicated::new(px, pdx),
            )?;
        }
        assert_eq!(
            outside(&dx, soff),
            before_x,
            "reverse wrote outside d_src's range"
        );
        assert_eq!(
            outside(&dy, doff),
            before_y,
            "reverse wrote outside d_dst's range"
        );
        assert!(
            region(&dy, doff).iter().all(|v| *v == T::zero()),
            "reverse leaves d_dst == 0"
        );
        Ok(region(&dx, soff))
    };
    let report = adjoint_check::<T>(n, n, seed, jvp, vjp).unwrap();
    report.assert_within(1e-12);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn adjoint_checks_on_device_every_dtype_random_sizes_and_offsets() {
    let s = gpu();
    let cases = [
        (0, 0, 0),
        (1, 1, 0),
        (7, 0, 3),
        (1000, 5, 1),
        (100_003, 2, 7),
        (1 << 20, 1, 0),
    ];
    for (i, &(n, doff, soff)) in cases.iter().enumerate() {
        let seed = 100 + i as u64;
        device_adjoint::<f32>(&s, n, doff, soff, seed);
        device_adjoint::<f64>(&s, n, doff, soff, seed);
        device_adjoint::<f16>(&s, n, doff, soff, seed);
        device_adjoint::<bf16>(&s, n, doff, soff, seed);
        device_adjoint::<Complex<f32>>(&s, n, doff, soff, seed);
        device_adjoint::<Complex<f64>>(&s, n, doff, soff, seed);
    }
}

/// `accumulate_and_zero` takes two paths on device: one fused launch below
/// `FUSED_SPLIT_BYTES` per operand, the accumulate kernel and a memset above. Both give
/// `acc == prior + src` exactly, `src == 0` in range, and touch nothing outside, on views at
/// equal and at different alignments.
#[test]
#[ignore = "needs a CUDA GPU"]
fn accumulate_and_zero_below_and_above_the_split_on_views() {
    use rules_runtime::{On, accumulate_and_zero, ops::FUSED_SPLIT_BYTES};
    let s = gpu();
    let split = FUSED_SPLIT_BYTES / size_of::<f32>();
    for (n, aoff, soff) in [
        (split - 1, 1, 1),
        (split + 5, 1, 1),
        (split + 5, 0, 3),
        (split, 4, 0),
    ] {
        let total = n + 8;
        let a0 = random_vec::<f32>(total, n as u64);
        let s0 = random_vec::<f32>(total, n as u64 + 1);
        let mut a = s.clone_htod(&a0).unwrap();
        let mut b = s.clone_htod(&s0).unwrap();
        {
            let mut av = a.slice_mut(aoff..aoff + n);
            let mut bv = b.slice_mut(soff..soff + n);
            accumulate_and_zero(On::stream(&s), &mut av, &mut bv).unwrap();
        }
        let (a1, s1) = (to_vec(&s, &a), to_vec(&s, &b));
        for i in 0..total {
            let inside_a = (aoff..aoff + n).contains(&i);
            let expected = if inside_a {
                a0[i] + s0[i - aoff + soff]
            } else {
                a0[i]
            };
            assert_eq!(a1[i].to_bits(), expected.to_bits(), "acc[{i}] (n = {n})");
            let inside_s = (soff..soff + n).contains(&i);
            let expected = if inside_s { 0.0 } else { s0[i] };
            assert_eq!(s1[i].to_bits(), expected.to_bits(), "src[{i}] (n = {n})");
        }
    }
}

// ---- Streams ---------------------------------------------------------------------------------

/// The reverse work lands on the copy's own (non-default) stream: with that stream held at a
/// gate, the reverse is enqueued but has not run; once the gate opens, it has.
#[test]
#[ignore = "needs a CUDA GPU"]
fn reverse_work_is_ordered_on_the_primal_stream() {
    let s = gpu();
    let s2 = s.context().new_stream().unwrap();
    let x = vec![1.0f32; 1 << 20];
    let mut y = dev_f32(&s2, x.len());
    let mut dy = s2.clone_htod(&vec![3.0f32; x.len()]).unwrap();
    let mut dx = vec![0.5f32; x.len()];
    let t = upload_rule(&s2)
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    s2.synchronize().unwrap();

    // The tape of a copy from a Const source, made before the gate: its primal (a pageable
    // upload, which synchronises the stream) must not run while the stream is held.
    let t_const = upload_rule(&s2)
        .augmented_primal(Duplicated::new(&mut y, &mut dy), Const(&x[..]))
        .unwrap();
    s2.memcpy_htod(&vec![3.0f32; x.len()], &mut dy).unwrap();
    s2.synchronize().unwrap();
    // The raw address of d_dst, taken now, so that probing it later adds no wait to any stream.
    let dy_addr = {
        let (p, sync) = dy.device_ptr(&s2);
        drop(sync);
        p
    };
    // A gate: s2 waits until a pinned flag becomes 1.
    let mut flag = unsafe { s.context().alloc_pinned::<u32>(1) }.unwrap();
    flag.as_mut_slice().unwrap()[0] = 0;
    let flag_ptr = flag.as_mut_ptr().unwrap();
    unsafe {
        sys::cuStreamWaitValue32_v2(
            s2.cu_stream(),
            flag_ptr as u64,
            1,
            sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32,
        )
        .result()
        .unwrap();
    }
    // The reverse of a copy from a Const source: d_dst ← 0, device work ordered on s2.
    let zeroed = upload_rule(&s2).reverse(t_const, Duplicated::new(&mut y, &mut dy), Const(&x[..]));
    // Probe d_dst on a third, non-blocking stream: the gated zeroing must not have happened.
    let probe_stream = s.context().new_stream().unwrap();
    let mut probe = vec![0.0f32; 4];
    let probed = unsafe {
        sys::cuMemcpyDtoHAsync_v2(
            probe.as_mut_ptr().cast(),
            dy_addr,
            16,
            probe_stream.cu_stream(),
        )
        .result()
    }
    .and_then(|()| probe_stream.synchronize());
    // Open the gate before asserting anything, so that a failure cannot leave s2 blocked.
    unsafe { core::ptr::write_volatile(flag_ptr, 1) };
    s2.synchronize().unwrap();
    zeroed.unwrap();
    probed.unwrap();
    assert_eq!(
        probe, [3.0; 4],
        "the reverse ran before its stream reached it"
    );
    assert!(
        to_vec(&s2, &dy).iter().all(|v| *v == 0.0),
        "the reverse ran once the stream was released"
    );
    let _ = t;
}

#[test]
fn gpu_suite_is_ignored_without_a_gpu_and_says_why() {
    // Not a GPU test: documents, and checks, how the suite behaves on a machine without CUDA.
    match rules_runtime::cuda::stream(0) {
        Ok(_) => {
            eprintln!("a GPU is present: run `cargo test -- --include-ignored` for the GPU suite")
        }
        Err(e @ (Error::NoDriver | Error::NoDevice { .. })) => {
            eprintln!("GPU suite SKIPPED (reported as ignored): {e}")
        }
        Err(e) => panic!("unexpected error probing for a GPU: {e}"),
    }
}

/// n > 2^31 elements (f16, 4 GiB a buffer): 64-bit indexing, the fused pass touches every element,
/// including the ones past 2^31 and the odd tail.
#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_handle_more_than_2_pow_31_elements() {
    let s = gpu();
    let n = (1usize << 31) + 7;
    let mut acc = unsafe { s.alloc::<f16>(n) }.unwrap();
    let mut src = unsafe { s.alloc::<f16>(n) }.unwrap();
    let (pa, ps) = (dptr(&s, &mut acc) as u64, dptr(&s, &mut src) as u64);
    unsafe {
        sys::cuMemsetD16Async(pa, f16::ONE.to_bits(), n, s.cu_stream())
            .result()
            .unwrap();
        sys::cuMemsetD16Async(ps, f16::from_f32(0.5).to_bits(), n, s.cu_stream())
            .result()
            .unwrap();
    }
    rules_runtime::accumulate_and_zero(rules_runtime::On::stream(&s), &mut acc, &mut src).unwrap();
    let probe = |b: &CudaSlice<f16>, at: usize, len: usize| -> Vec<f16> {
        let mut out = vec![f16::ZERO; len];
        s.memcpy_dtoh(&b.slice(at..at + len), &mut out[..]).unwrap();
        out
    };
    for at in [0, (1 << 31) - 4, n - 1024] {
        let len = (n - at).min(1024);
        assert!(
            probe(&acc, at, len)
                .iter()
                .all(|v| *v == f16::from_f32(1.5)),
            "acc at {at}"
        );
        assert!(
            probe(&src, at, len).iter().all(|v| *v == f16::ZERO),
            "src at {at}"
        );
    }
}
