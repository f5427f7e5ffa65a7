//! `unsafe fn` primals and fallible primals with their own error types.

use rules_runtime::{CopyRule, RegionRule};
use rules_runtime::{Const, Duplicated, Error, derivative_rule};
use std::fmt;

/// The primal's own error type.
#[derive(Debug)]
struct LengthError {
    dst: usize,
    src: usize,
}

impl fmt::Display for LengthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot copy {} elements into {}", self.src, self.dst)
    }
}

impl std::error::Error for LengthError {}

/// An unsafe slice primal: the rules stay safe to call, the call inside is wrapped.
///
/// # Safety
/// `dst` and `src` have the same length.
#[derivative_rule(copy)]
unsafe fn unchecked(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr(), src.len()) }
}

/// An unsafe slice primal with other arguments: a counter it reborrows, a parameter of test
/// builds only, and a type parameter. Its rule object holds them sealed.
///
/// # Safety
/// `dst` holds at least as many elements as `src`.
#[derivative_rule(copy)]
unsafe fn copy_n<T: Copy>(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[inert] calls: &mut usize,
    #[cfg(test)]
    #[inert]
    _tag: u8,
    #[inert] _like: &T,
) {
    *calls += 1;
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr(), src.len()) }
}

/// An unsafe region primal: its plan reads the sealed arguments.
///
/// # Safety
/// Both buffers hold `height` rows of `width` elements, `pitch` bytes apart.
#[derivative_rule(copy2d)]
unsafe fn rows_unchecked(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[width] width: usize,
    #[height] height: usize,
    #[dst_pitch] pitch: usize,
    #[src_pitch] spitch: usize,
) {
    for r in 0..height {
        let (d, s) = (r * pitch / 4, r * spitch / 4);
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr().add(s), dst.as_mut_ptr().add(d), width) }
    }
}

#[derivative_rule(copy)]
fn custom_error(#[dst] dst: &mut [f32], #[src] src: &[f32]) -> Result<(), LengthError> {
    if dst.len() != src.len() {
        return Err(LengthError {
            dst: dst.len(),
            src: src.len(),
        });
    }
    dst.copy_from_slice(src);
    Ok(())
}

/// A primal that fails on its own terms: its error comes back as `Error::Primal`.
#[derivative_rule(copy)]
fn refuse_nan(#[dst] dst: &mut [f32], #[src] src: &[f32]) -> Result<(), LengthError> {
    if src.iter().any(|x| x.is_nan()) {
        return Err(LengthError { dst: 0, src: 0 });
    }
    dst.copy_from_slice(src);
    Ok(())
}

#[derivative_rule(copy)]
fn io_result(#[dst] dst: &mut [f64], #[src] src: &[f64]) -> std::io::Result<()> {
    dst.copy_from_slice(src);
    Ok(())
}

#[derivative_rule(copy)]
fn string_error(#[dst] dst: &mut [f64], #[src] src: &[f64]) -> ::core::result::Result<(), String> {
    dst.copy_from_slice(src);
    Ok(())
}

#[derivative_rule(copy)]
fn unit(#[dst] dst: &mut [f64], #[src] src: &[f64]) -> () {
    dst.copy_from_slice(src);
}

fn main() {
    let x = [1.0f32; 2];
    let mut y = [0.0f32; 2];
    unsafe { unchecked_rule().forward(Const(&mut y[..]), Const(&x[..])) }.unwrap();
    custom_error_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    let mut calls = 0;
    let mut dx = [0.0f32; 2];
    {
        // SAFETY: every buffer below holds 2 elements.
        let mut rule = unsafe { copy_n_rule(&mut calls, &0u8) };
        let tape = rule
            .augmented_primal(Const(&mut y[..]), Duplicated::new(&x[..], &mut dx[..]))
            .unwrap();
        rule.reverse(tape, Const(&mut y[..]), Duplicated::new(&x[..], &mut dx[..]))
            .unwrap();
    }
    assert_eq!(calls, 1);
    let mut box2 = [0.0f32; 4];
    // SAFETY: both buffers hold 2 rows of 2 elements, 8 bytes apart.
    unsafe { rows_unchecked_rule(2, 2, 8, 8) }
        .forward(Const(&mut box2[..]), Const(&[1.0f32; 4][..]))
        .unwrap();
    assert_eq!(box2, [1.0; 4]);
    let x = [1.0f64; 3];
    let mut dx = [0.0f64; 3];
    let mut y = [0.0f64; 3];
    io_result_rule().forward(Const(&mut y[..]), Duplicated::new(&x[..], &mut dx[..])).unwrap();
    string_error_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    unit_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    let mut z = [0.0f32; 2];
    let err = refuse_nan_rule().forward(Const(&mut z[..]), Const(&[f32::NAN; 2][..]));
    assert!(matches!(err, Err(Error::Primal(_))), "{err:?}");
    // Bad lengths are refused before anything runs, the primal included.
    let mut short = [0.0f32; 1];
    let err = custom_error_rule().augmented_primal(Const(&mut short[..]), Const(&[1.0f32; 2][..]));
    assert!(matches!(err, Err(Error::LengthMismatch { .. })), "{err:?}");
}
