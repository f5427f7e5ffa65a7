//! The checked mode on the device (`--features checked`, `--include-ignored` on a GPU): the
//! compare kernel (`check.ptx`) on the copy's stream, and the host compare of an upload's or a
//! download's two sides. As `checked.rs` does on the host: a primitive that does something other
//! than its kind says gives `Error::PrimalDisagrees` (the count and the first indices exact),
//! nothing else is written; the right primitives pass. Exact for every element type (f32, f64,
//! f16, bf16, complex) and for views at odd offsets and odd lengths.
//!
//! `#[ignore]`d like every GPU suite: without `--include-ignored` a machine without a GPU
//! reports them ignored; with it, a missing GPU is a failure.

use half::{bf16, f16};
use num_complex::Complex;
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr};
use rules_runtime::cudarc::driver::{DevicePtr, DevicePtrMut, DriverError, ValidAsZeroBits, sys};
use rules_runtime::{
    Assumed, Const, CopyRule, Differentiable, Duplicated, Error, FillRule, MemsetRule,
    PrimalDisagreement, RawCopyRule, derivative_rule,
};
use rules_tests::{download_rule, upload_rule};
use std::sync::Arc;

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

fn disagreement(e: Error) -> PrimalDisagreement {
    match e {
        Error::PrimalDisagrees(d) => *d,
        e => panic!("expected PrimalDisagrees, got {e}"),
    }
}

fn first(d: &PrimalDisagreement) -> Vec<usize> {
    d.first.iter().map(|p| p.0).collect()
}

/// A device copy of views.
#[derivative_rule(copy)]
fn copy_view<T: Differentiable + DeviceRepr>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaViewMut<'_, T>,
    #[src] src: &CudaView<'_, T>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// "A device copy" of the first half of the views only.
#[derivative_rule(copy)]
fn copy_half_view<T: Differentiable + DeviceRepr>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaViewMut<'_, T>,
    #[src] src: &CudaView<'_, T>,
) -> Result<(), DriverError> {
    let k = dst.len() / 2;
    stream.memcpy_dtod(&src.slice(..k), &mut dst.slice_mut(..k))
}

/// "A device copy" that scales (through the host: the primitive is wrong, not slow).
#[derivative_rule(copy)]
fn scale_dev(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    let h: Vec<f32> = stream.clone_dtoh(src)?.iter().map(|x| 2.0 * x).collect();
    stream.memcpy_htod(&h, dst)
}

/// "A device copy" that reverses the order.
#[derivative_rule(copy)]
fn reverse_dev(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    let mut h = stream.clone_dtoh(src)?;
    h.reverse();
    stream.memcpy_htod(&h, dst)
}

/// "A device memset" of the first half.
#[derivative_rule(memset)]
fn clear_half_dev(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
) -> Result<(), DriverError> {
    let k = dst.len() / 2;
    stream.memset_zeros(&mut dst.slice_mut(..k))
}

/// A device memset.
#[derivative_rule(memset)]
fn clear_dev(stream: &Arc<CudaStream>, #[dst] dst: &mut CudaSlice<f32>) -> Result<(), DriverError> {
    stream.memset_zeros(dst)
}

/// "A device fill" of twice the value.
#[derivative_rule(fill)]
fn fill_twice_dev(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: f32,
) -> Result<(), DriverError> {
    stream.memcpy_htod(&vec![2.0 * v; dst.len()], dst)
}

/// A device fill.
#[derivative_rule(fill)]
fn fill_dev(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: f32,
) -> Result<(), DriverError> {
    stream.memcpy_htod(&vec![v; dst.len()], dst)
}

/// "An upload" of the first half.
#[derivative_rule(copy)]
fn upload_half(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    let k = dst.len() / 2;
    stream.memcpy_htod(&src[..k], &mut dst.slice_mut(..k))
}

/// "A download" of the first half.
#[derivative_rule(copy)]
fn download_half(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    let k = dst.len() / 2;
    stream.memcpy_dtoh(&src.slice(..k), &mut dst[..k])
}

/// "A device copy" of the first half, raw device pointers (any element type, complex included:
/// cudarc has no buffers of complex numbers).
///
/// # Safety
/// Both ranges valid device memory for `n` elements from their offsets, ordered on `stream`.
#[derivative_rule(copy, dst = device, src = device)]
unsafe fn copy_half_d2d<T>(
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
    unsafe { sys::cuMemcpyDtoDAsync_v2(d, s, n / 2 * size, stream.cu_stream()).result() }
}

/// As [`exact`], for an element type `T` of two reals `R`, through raw device pointers: a copy
/// of half is found exactly.
fn exact_raw<T: Differentiable, R: DeviceRepr + ValidAsZeroBits + From<u16>>(s: &Arc<CudaStream>) {
    for (n, off) in [(1usize, 0usize), (3, 1), (1001, 3), (65_537, 7)] {
        let host: Vec<R> = (0..2 * (n + off))
            .map(|i| R::from((i % 60_000) as u16 + 1))
            .collect();
        let x = s.clone_htod(&host).unwrap();
        let mut y = s.alloc_zeros::<R>(2 * (n + off + 2)).unwrap();
        let mut dy = s.alloc_zeros::<R>(2 * (n + 1)).unwrap();
        let (xp, _g1) = x.device_ptr(s);
        let (yp, _g2) = y.device_ptr_mut(s);
        let (dyp, _g3) = dy.device_ptr_mut(s);
        let mut rule = copy_half_d2d_rule(s, off + 1, off, n);
        // SAFETY: every pointer holds `offset + n` elements of `T` (two reals each) on `s`'s
        // device, ordered on `s` by the guards; the buffers are distinct.
        let r = unsafe {
            rule.forward(
                Duplicated::new(yp as *mut T, dyp as *mut T),
                Const(xp as *const T),
            )
        };
        let d = disagreement(r.expect_err("a half copy passed"));
        assert_eq!(d.count, (n - n / 2) as u64, "{:?} n = {n}", T::DTYPE);
        let want: Vec<usize> = (n / 2..n).take(8).collect();
        assert_eq!(first(&d), want, "{:?} n = {n}", T::DTYPE);
    }
}

fn ramp(n: usize) -> Vec<f32> {
    (1..=n).map(|i| i as f32).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_copies_that_scale_or_permute_are_refused_and_shadows_untouched() {
    let s = gpu();
    let n = 1001;
    let x = s.clone_htod(&ramp(n)).unwrap();
    let mut y = s.alloc_zeros::<f32>(n).unwrap();
    let mut dy = s.clone_htod(&vec![7.0f32; n]).unwrap();
    let mut dx = s.clone_htod(&vec![5.0f32; n]).unwrap();
    let e = scale_dev_rule(&s)
        .forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap_err();
    let d = disagreement(e);
    assert_eq!(
        (d.rule, d.param, d.count, d.total),
        ("scale_dev", "dst", n as u64, n as u64)
    );
    assert_eq!(first(&d), (0..8).collect::<Vec<_>>());
    assert_eq!(s.clone_dtoh(&dy).unwrap(), vec![7.0; n]);
    assert_eq!(s.clone_dtoh(&dx).unwrap(), vec![5.0; n]);
    let e = reverse_dev_rule(&s)
        .augmented_primal(Duplicated::new(&mut y, &mut dy), Const(&x))
        .unwrap_err();
    let d = disagreement(e);
    // The middle element (500) is its own mirror.
    assert_eq!(d.count, n as u64 - 1);
    assert_eq!(first(&d), (0..8).collect::<Vec<_>>());
    assert_eq!(s.clone_dtoh(&dy).unwrap(), vec![7.0; n]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_memsets_and_fills_of_the_wrong_kind_are_refused() {
    let s = gpu();
    let n = 777;
    let mut y = s.clone_htod(&vec![3.0f32; n]).unwrap();
    let mut dy = s.clone_htod(&vec![1.0f32; n]).unwrap();
    let e = clear_half_dev_rule(&s)
        .forward(Duplicated::new(&mut y, &mut dy))
        .unwrap_err();
    let d = disagreement(e);
    assert_eq!(d.assumed, Assumed::Memset);
    assert_eq!(d.count, (n - n / 2) as u64);
    assert_eq!(first(&d), (n / 2..n / 2 + 8).collect::<Vec<_>>());
    assert_eq!(s.clone_dtoh(&dy).unwrap(), vec![1.0; n]);
    let e = fill_twice_dev_rule(&s)
        .forward(Duplicated::new(&mut y, &mut dy), Const(1.5f32))
        .unwrap_err();
    let d = disagreement(e);
    assert_eq!((d.param, d.count), ("dst", n as u64));
    assert_eq!(s.clone_dtoh(&dy).unwrap(), vec![1.0; n]);
    // The right ones pass.
    clear_dev_rule(&s)
        .forward(Duplicated::new(&mut y, &mut dy))
        .unwrap();
    assert_eq!(s.clone_dtoh(&dy).unwrap(), vec![0.0; n]);
    fill_dev_rule(&s)
        .forward(Duplicated::new(&mut y, &mut dy), Const(1.5f32))
        .unwrap();
    assert_eq!(s.clone_dtoh(&y).unwrap(), vec![1.5; n]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn uploads_and_downloads_are_compared_across_the_link() {
    let s = gpu();
    let n = 9;
    let x = ramp(n);
    let mut y = s.alloc_zeros::<f32>(n).unwrap();
    let mut dy = s.clone_htod(&vec![2.0f32; n]).unwrap();
    let e = upload_half_rule(&s)
        .forward(Duplicated::new(&mut y, &mut dy), Const(&x[..]))
        .unwrap_err();
    let d = disagreement(e);
    assert_eq!((d.rule, d.count), ("upload_half", 5));
    assert_eq!(first(&d), [4, 5, 6, 7, 8]);
    assert_eq!(s.clone_dtoh(&dy).unwrap(), vec![2.0; n]);
    let xd = s.clone_htod(&x).unwrap();
    let (mut h, mut dh) = (vec![0.0f32; n], vec![4.0f32; n]);
    let e = download_half_rule(&s)
        .forward(Duplicated::new(&mut h[..], &mut dh[..]), Const(&xd))
        .unwrap_err();
    assert_eq!(first(&disagreement(e)), [4, 5, 6, 7, 8]);
    assert_eq!(dh, vec![4.0; n]);
    // The right ones pass.
    upload_rule(&s)
        .forward(Duplicated::new(&mut y, &mut dy), Const(&x[..]))
        .unwrap();
    download_rule(&s)
        .forward(Duplicated::new(&mut h[..], &mut dh[..]), Const(&y))
        .unwrap();
    assert_eq!(h, x);
}

/// Every element type, views at odd offsets, odd lengths: a right copy passes; a copy of half
/// is found exactly (its count and its first indices).
fn exact<T>(s: &Arc<CudaStream>, make: impl Fn(usize) -> T)
where
    T: Differentiable + DeviceRepr + ValidAsZeroBits,
{
    for (n, off) in [(1usize, 0usize), (3, 1), (1001, 3), (65_537, 7)] {
        let host: Vec<T> = (0..n + off).map(&make).collect();
        let x = s.clone_htod(&host).unwrap();
        let mut y = s.alloc_zeros::<T>(n + off + 2).unwrap();
        let mut dy = s.alloc_zeros::<T>(n + 1).unwrap();
        let xv = x.slice(off..off + n);
        let mut yv = y.slice_mut(off + 1..off + 1 + n);
        let mut dyv = dy.slice_mut(1..n + 1);
        copy_view_rule(s)
            .forward(Duplicated::new(&mut yv, &mut dyv), Const(&xv))
            .unwrap_or_else(|e| panic!("{:?} n = {n}: {e}", T::DTYPE));
        let mut y2 = s.alloc_zeros::<T>(n + off + 2).unwrap();
        let mut yv = y2.slice_mut(off + 1..off + 1 + n);
        // Zeros where the copy left the destination alone: `make` gives no zero (checked below).
        match copy_half_view_rule(s).forward(Duplicated::new(&mut yv, &mut dyv), Const(&xv)) {
            Err(e) => {
                let d = disagreement(e);
                assert_eq!(d.count, (n - n / 2) as u64, "{:?} n = {n}", T::DTYPE);
                let want: Vec<usize> = (n / 2..n).take(8).collect();
                assert_eq!(first(&d), want, "{:?} n = {n}", T::DTYPE);
            }
            Ok(()) => panic!("{:?} n = {n}: a half copy passed", T::DTYPE),
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_compare_is_exact_for_every_element_type_and_odd_views() {
    let s = gpu();
    exact(&s, |i| 1.0f32 + i as f32);
    exact(&s, |i| 1.0f64 + i as f64);
    exact(&s, |i| f16::from_f32(1.0 + (i % 1000) as f32));
    exact(&s, |i| bf16::from_f32(1.0 + (i % 100) as f32));
    exact_raw::<Complex<f32>, f32>(&s);
    exact_raw::<Complex<f64>, f64>(&s);
    // Bits, not values: -0.0 against +0.0 and NaN payloads.
    let x = s.clone_htod(&[f32::NAN, -0.0, 1.0]).unwrap();
    let mut y = s.alloc_zeros::<f32>(3).unwrap();
    let mut dy = s.alloc_zeros::<f32>(3).unwrap();
    let (xv, mut yv, mut dyv) = (x.slice(..), y.slice_mut(..), dy.slice_mut(..));
    copy_view_rule(&s)
        .forward(Duplicated::new(&mut yv, &mut dyv), Const(&xv))
        .unwrap();
}
