//! The bridges of a pointer `fill` (`dst[R] ← v`, the value taken by value): one buffer side and
//! a float argument, which Enzyme's conventions treat unlike a buffer.
//!
//! In reverse mode a float argument has no shadow slot: Enzyme treats it as active (`OUT_DIFF`,
//! also when it is constant: its "massaging" wrapper then drops the result) and the custom
//! reverse returns its derivative, `d_v = Σ_R d_dst` (EnzymeLogic.cpp: the custom augmented
//! primal is called with no slot after an `OUT_DIFF` argument, and a reverse that returns one
//! float where `{float}` is expected is wrapped). In forward mode it has one, the tangent `dv`
//! (zero for a constant value, filled in by Enzyme's `fixderivative_` wrapper).
//!
//! A destination Enzyme treats as inactive gets `Const`: nothing downstream of it is
//! differentiated, so `d_v = 0` is the derivative (Enzyme would compute the same for a body it
//! could see).

use super::arrays::Entered;
use super::bridge::{Resolved, Side, Streams, finished, streams};
use super::tapes::Tape;
use crate::activity::{Active, Const, Dual, Duplicated};
use crate::autodiff::{AdError, Bridge, record};
use crate::element::Differentiable;
use crate::rules::{RawFillRule, RegionTape};

/// A pointer `fill`'s rule object, for the fill bridges.
pub struct Fill<R>(pub R);

/// The rule object, and its destination checked against its box and resolved.
///
/// # Safety
/// As `Side::resolve` for `dst`.
unsafe fn prepare<'s, T, R>(
    make: impl FnOnce(Streams<'s>) -> Result<Fill<R>, AdError>,
    dst: &Side<T>,
) -> Result<(Streams<'s>, R, Resolved<T>), AdError>
where
    T: Differentiable,
    R: RawFillRule<'s, T>,
{
    // SAFETY: this function's contract (`Absent` is no handle).
    let st = unsafe { streams(dst, &Side::Absent)? };
    let Fill(rule) = make(st)?;
    let (_, shape, _) = rule.__plan();
    let fits = |what, len| {
        shape
            .dst
            .check::<T>(what, len)
            .map(drop)
            .map_err(AdError::Rule)
    };
    // SAFETY: this function's contract.
    let d = unsafe { dst.resolve("dst", fits)? };
    Ok((st, rule, d))
}

/// The `extern "C"` primal of a fill: the fill through the rule object.
///
/// # Safety
/// As `Side::resolve` for `dst`; the rule's contract for the pointer it holds.
pub unsafe fn fill_primal<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<Fill<R>, AdError>,
    dst: Side<T>,
    v: T,
) where
    T: Differentiable,
    R: RawFillRule<'s, T>,
{
    let _ = record((name, Bridge::Primal), || {
        let _e = Entered::new()?;
        // SAFETY: this function's contract.
        let (st, mut rule, d) = unsafe { prepare(make, &dst)? };
        let _unwind = st.wait_on_unwind();
        // SAFETY: a checked side; the rule's contract by this function's.
        let ran = unsafe { rule.forward(Const(primal(d)), Const(v)) }.map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// The forward rule of a fill: the value's shadow slot is its tangent `dv`; `d_dst[R] ← dv`.
///
/// # Safety
/// As [`fill_aug`].
pub unsafe fn fill_fwd<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<Fill<R>, AdError>,
    dst: Side<T>,
    (v, dv): (T, T),
) where
    T: Differentiable,
    R: RawFillRule<'s, T>,
{
    let _ = record((name, Bridge::Fwd), || {
        let _e = Entered::new()?;
        // SAFETY: this function's contract.
        let (st, mut rule, d) = unsafe { prepare(make, &dst)? };
        let _unwind = st.wait_on_unwind();
        // SAFETY: a checked side; the rule's contract by this function's.
        let ran = unsafe {
            match d {
                Resolved::Dup(p, dp) => rule.forward(Duplicated::new(p, dp), Dual::new(v, dv)),
                Resolved::Const(p) => rule.forward(Const(p), Const(v)),
            }
        }
        .map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// The tape of a bridged fill, and whether the destination was active.
struct FillTape<T> {
    tape: RegionTape<T>,
    active: bool,
}

/// The augmented primal of a fill (no shadow slot for the value: see the module docs); returns
/// the boxed tape, or `None` after recording the error.
///
/// # Safety
/// As [`fill_primal`], the shadow included.
pub unsafe fn fill_aug<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<Fill<R>, AdError>,
    dst: Side<T>,
    v: T,
) -> Tape
where
    T: Differentiable,
    R: RawFillRule<'s, T>,
{
    record((name, Bridge::Aug), || {
        let _e = Entered::new()?;
        // SAFETY: this function's contract.
        let (st, mut rule, d) = unsafe { prepare(make, &dst)? };
        let _unwind = st.wait_on_unwind();
        // SAFETY: a checked side; the rule's contract by this function's.
        let tape = unsafe {
            match d {
                Resolved::Dup(p, dp) => rule.augmented_primal(Duplicated::new(p, dp), Active(v)),
                Resolved::Const(p) => rule.augmented_primal(Const(p), Active(v)),
            }
        }
        .map_err(AdError::Rule);
        let tape = finished(st, tape)?;
        let active = matches!(d, Resolved::Dup(..));
        Ok(Box::new(FillTape { tape, active }) as _)
    })
}

/// The reverse of a fill: zeroes `d_dst[R]` and returns `d_v = Σ_R d_dst` (zero after an error,
/// which is recorded).
///
/// # Safety
/// As [`fill_aug`]; `tape` is what [`fill_aug`] returned for this call.
pub unsafe fn fill_rev<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<Fill<R>, AdError>,
    dst: Side<T>,
    v: T,
    tape: Tape,
) -> T
where
    T: Differentiable,
    R: RawFillRule<'s, T>,
{
    record((name, Bridge::Rev), || {
        let FillTape { tape, active } = *tape
            .ok_or(AdError::NoTape)?
            .downcast::<FillTape<T>>()
            .map_err(|_| AdError::TapeOrder)?;
        let _e = Entered::new()?;
        // SAFETY: this function's contract.
        let (st, mut rule, d) = unsafe { prepare(make, &dst)? };
        let _unwind = st.wait_on_unwind();
        if matches!(d, Resolved::Dup(..)) != active {
            return Err(AdError::ActivityChanged { what: "dst" });
        }
        // SAFETY: a checked side; the rule's contract by this function's.
        let dv = unsafe {
            match d {
                Resolved::Dup(p, dp) => rule
                    .reverse(tape, Duplicated::new(p, dp), Active(v))
                    .map(|[dv]| dv),
                Resolved::Const(p) => rule.reverse(tape, Const(p), Active(v)).map(|[]| T::zero()),
            }
        }
        .map_err(AdError::Rule);
        finished(st, dv)
    })
    .unwrap_or_else(T::zero)
}

fn primal<T>(r: Resolved<T>) -> *mut T {
    match r {
        Resolved::Dup(p, _) | Resolved::Const(p) => p,
    }
}
