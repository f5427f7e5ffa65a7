//! Compile-time checking of `#[derivative_rule]`: the misuse catalogue lives in `compile_fail/`
//! and `pass/` (run by `tests/ui.rs`). This library is the lint check: rules written several ways
//! in an ordinary crate that denies strict rustc lints and warns on every pedantic clippy lint, so
//! that `cargo clippy -p ui-tests -- -D warnings` shows that the generated code adds none.
#![deny(missing_docs, unused_qualifications, unsafe_op_in_unsafe_fn)]
#![deny(unused, nonstandard_style, rust_2018_idioms, unreachable_pub)]
#![deny(
    single_use_lifetimes,
    unused_lifetimes,
    trivial_casts,
    trivial_numeric_casts
)]
#![warn(clippy::pedantic)]

use half::f16;
use num_complex::Complex;
use rules_runtime::{Differentiable, derivative_rule};
use std::fmt;

/// A slice copy.
#[derivative_rule(copy)]
pub fn copy_slice(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

/// A copy between arrays of complex numbers, under other names.
#[derivative_rule(copy, rule = complex_copy)]
pub fn copy_complex(#[dst] dst: &mut [Complex<f64>; 3], #[src] src: &[Complex<f64>; 3]) {
    *dst = *src;
}

/// A generic copy between arrays.
#[derivative_rule(copy)]
pub fn copy_array<T: Differentiable, const N: usize>(#[dst] dst: &mut [T; N], #[src] src: &[T; N]) {
    *dst = *src;
}

/// What can go wrong in [`copy_checked`].
#[derive(Debug)]
pub struct LengthError;

impl fmt::Display for LengthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("lengths differ")
    }
}

impl std::error::Error for LengthError {}

/// A fallible copy with pass-through arguments.
///
/// # Errors
/// [`LengthError`] when the lengths differ.
#[derivative_rule(copy)]
pub fn copy_checked(
    #[dst] dst: &mut [f16],
    #[src] src: &[f16],
    #[inert] calls: &mut usize,
    label: &str,
) -> Result<(), LengthError> {
    *calls += 1;
    if dst.len() != src.len() || label.is_empty() {
        return Err(LengthError);
    }
    dst.copy_from_slice(src);
    Ok(())
}

/// A pointer copy at offsets.
///
/// # Safety
/// `src + from` and `dst + at` are valid for `n` elements.
#[derivative_rule(copy, dst = host, src = pinned)]
pub unsafe fn copy_raw(
    #[dst] dst: *mut f64,
    #[dst_offset] at: usize,
    #[src] src: *const f64,
    #[src_offset] from: usize,
    #[len] n: usize,
) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src.add(from), dst.add(at), n) }
}

/// A pointer copy with the `std::autodiff` bridges (`autodiff`): emitted only with the runtime's
/// `autodiff` feature; `cargo clippy -p ui-tests --features rules-runtime/autodiff -- -D warnings`
/// checks them on stable (nothing in them needs nightly).
///
/// # Safety
/// `src + from` and `dst + at` are valid for `n` elements.
#[derivative_rule(copy, dst = device, src = host, autodiff)]
pub unsafe fn upload_bridged(
    stream: &rules_runtime::cudarc::driver::CudaStream,
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[src] src: *const f32,
    #[src_offset] from: usize,
    #[len] n: usize,
) {
    let _ = stream;
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src.add(from), dst.add(at), n) }
}

/// A generic pointer copy bridged for two element types, `autodiff(f32, f64)`.
///
/// # Safety
/// `src` and `dst` are valid for `n` elements.
#[derivative_rule(copy, dst = unified, src = pinned, autodiff(f32, f64))]
pub unsafe fn copy_bridged<T: Differentiable>(
    #[dst] dst: *mut T,
    #[src] src: *const T,
    #[len] n: usize,
) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) }
}

/// A pitched 2D copy with the bridges: its region rule checks each side's box.
///
/// # Safety
/// `src` and `dst` hold their boxes (`height` rows of `width` elements, rows `spitch` /
/// `dpitch` bytes apart).
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy2d, dst = device, src = pinned, autodiff)]
pub unsafe fn rows_bridged(
    stream: &rules_runtime::cudarc::driver::CudaStream,
    #[dst] dst: *mut f64,
    #[dst_pitch] dpitch: usize,
    #[src] src: *const f64,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let _ = stream;
    for r in 0..height {
        // SAFETY: the caller's contract.
        unsafe {
            std::ptr::copy_nonoverlapping(src.add(r * spitch / 8), dst.add(r * dpitch / 8), width);
        }
    }
}

/// A memset with the bridges (no source: `Side::Absent`).
///
/// # Safety
/// `dst` is valid for `n` elements.
#[derivative_rule(memset, dst = host, autodiff)]
pub unsafe fn set_bridged(#[dst] dst: *mut f32, #[len] n: usize, #[value] bits: u32) {
    for i in 0..n {
        // SAFETY: the caller's contract.
        unsafe { dst.add(i).write(f32::from_bits(bits)) }
    }
}

/// A fill with the bridges: the value's derivative is the reverse bridge's return value.
///
/// # Safety
/// `dst` is valid for `n` elements.
#[derivative_rule(fill, dst = unified, autodiff(f32, f64))]
pub unsafe fn fill_bridged<T: Differentiable>(#[dst] dst: *mut T, #[len] n: usize, #[value] v: T) {
    for i in 0..n {
        // SAFETY: the caller's contract.
        unsafe { dst.add(i).write(v) }
    }
}

/// A copy into a box of a CUDA array with the bridges: the array by an `AdArray` handle, the
/// linear side, generic over `Linear`, by an `AdBuf` handle of any memory kind (`RawShadow`).
///
/// # Errors
/// A box outside either buffer, or the driver's error.
#[derivative_rule(copy2d, autodiff(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn to_array_bridged<T, L>(
    stream: &std::sync::Arc<rules_runtime::cudarc::driver::CudaStream>,
    #[dst] dst: &mut rules_runtime::memory::array::CudaArray<T>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src] src: &L,
    #[src_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> rules_runtime::Result<()>
where
    T: rules_runtime::memory::array::ArrayElement,
    L: rules_runtime::memory::linear::Linear<Elem = T> + ?Sized,
{
    let shape = (width, height, 1);
    rules_runtime::memory::linear::linear_to_array(
        stream,
        dst,
        (x, y, 0),
        src,
        (pitch, height),
        shape,
    )
}

/// A fill of an array's rows with the bridges.
///
/// # Errors
/// A box outside the array, or the driver's error.
#[derivative_rule(fill, autodiff)]
pub fn fill_array_bridged(
    stream: &std::sync::Arc<rules_runtime::cudarc::driver::CudaStream>,
    #[dst] dst: &mut rules_runtime::memory::array::CudaArray<f32>,
    #[value] v: f32,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> rules_runtime::Result<()> {
    let src = vec![v; width * height];
    let rows = (width * 4, height);
    rules_runtime::memory::linear::linear_to_array(
        stream,
        dst,
        (x, y, 0),
        &src[..],
        rows,
        (width, height, 1),
    )
}

/// A slice copy of a length it trusts: its rule object holds its arguments sealed, built by an
/// `unsafe` constructor.
///
/// # Safety
/// `dst` and `src` hold at least `n` elements.
#[derivative_rule(copy)]
pub unsafe fn copy_trusted(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[inert] n: usize,
    #[inert] calls: &mut usize,
) {
    *calls += 1;
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr(), n) }
}

/// An all-gather over NCCL: a collective rule.
///
/// # Errors
/// When NCCL fails.
#[derivative_rule(all_gather)]
pub fn gather(
    comm: &rules_runtime::nccl::Comm,
    #[src] x: &rules_runtime::cudarc::driver::CudaSlice<f32>,
    #[dst] y: &mut rules_runtime::cudarc::driver::CudaSlice<f32>,
) -> Result<(), rules_runtime::Error> {
    comm.all_gather(x, y)
        .map(drop)
        .map_err(|_| rules_runtime::Error::NoNccl)
}

/// A send to a peer, the communicator marked and shared.
///
/// # Errors
/// When NCCL fails.
#[derivative_rule(send)]
pub fn send_to(
    #[comm] comm: &std::sync::Arc<rules_runtime::nccl::Comm>,
    #[peer] peer: i32,
    #[src] x: &rules_runtime::cudarc::driver::CudaSlice<f64>,
) -> Result<(), rules_runtime::Error> {
    comm.send(x, peer).map_err(|_| rules_runtime::Error::NoNccl)
}

/// A buffer type whose copy is an associated function.
#[derive(Debug)]
pub struct Buffers;

impl Buffers {
    /// A copy on an associated function, with a parameter that exists in test builds only.
    #[derivative_rule(copy, in_impl)]
    pub fn copy_assoc(
        #[dst] dst: &mut [f64],
        #[src] src: &[f64],
        #[cfg(test)]
        #[inert]
        calls: &mut usize,
    ) {
        #[cfg(test)]
        {
            *calls += 1;
        }
        dst.copy_from_slice(src);
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp, reason = "copies are exact")]
mod tests {
    use super::*;
    use rules_runtime::{Const, CopyRule, Duplicated, RawCopyRule};

    #[test]
    fn the_generated_rules_run() {
        let x = [1.0f32, 2.0];
        let mut dx = [0.0f32; 2];
        let (mut y, mut dy) = ([0.0f32; 2], [3.0f32; 2]);
        copy_slice_rule()
            .forward(Const(&mut y[..]), Const(&x[..]))
            .unwrap();
        let tape = copy_slice_rule()
            .augmented_primal(
                Duplicated::new(&mut y[..], &mut dy[..]),
                Duplicated::new(&x[..], &mut dx[..]),
            )
            .unwrap();
        copy_slice_rule()
            .reverse(
                tape,
                Duplicated::new(&mut y[..], &mut dy[..]),
                Duplicated::new(&x[..], &mut dx[..]),
            )
            .unwrap();
        assert_eq!((y, dx, dy), (x, [3.0; 2], [0.0; 2]));

        let xc = [Complex::new(1.0, 2.0); 3];
        let mut yc = [Complex::new(0.0, 0.0); 3];
        let mut rule = complex_copy();
        rule.forward(Const(&mut yc), Const(&xc)).unwrap();
        let tape = rule.augmented_primal(Const(&mut yc), Const(&xc)).unwrap();
        rule.reverse(tape, Const(&mut yc), Const(&xc)).unwrap();
        assert_eq!(yc, xc);

        let mut ya = [0.0f64; 2];
        copy_array_rule()
            .forward(Const(&mut ya), Const(&[1.0, 2.0]))
            .unwrap();
        assert_eq!(ya, [1.0, 2.0]);

        let mut calls = 0;
        let xh = [f16::ONE; 2];
        let mut yh = [f16::ZERO; 2];
        copy_checked_rule(&mut calls, "h")
            .forward(Const(&mut yh[..]), Const(&xh[..]))
            .unwrap();
        assert_eq!((yh, calls), (xh, 1));

        let xr = [1.0f64, 2.0, 3.0];
        let mut yr = [0.0f64; 3];
        // SAFETY: both arrays hold 3 elements; 2 are copied at offsets 1.
        unsafe { copy_raw_rule(1, 1, 2).forward(Const(yr.as_mut_ptr()), Const(xr.as_ptr())) }
            .unwrap();
        assert_eq!(yr, [0.0, 2.0, 3.0]);

        let mut calls = 0;
        let mut yt = [0.0f32; 2];
        // SAFETY: both buffers hold 2 elements.
        unsafe { copy_trusted_rule(2, &mut calls) }
            .forward(Const(&mut yt[..]), Const(&x[..]))
            .unwrap();
        assert_eq!((yt, calls), (x, 1));

        let mut n = 0;
        let mut yb = [0.0f64; 2];
        Buffers::copy_assoc_rule(&mut n)
            .forward(Const(&mut yb[..]), Const(&[1.0, 2.0][..]))
            .unwrap();
        assert_eq!((yb, n), ([1.0, 2.0], 1));
    }
}
