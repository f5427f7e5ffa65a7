//! The array bridges of a fill by value: the destination opened, the value with no shadow slot
//! in reverse mode (as the pointer fill's, `autodiff/raw/fill.rs`), its derivative returned
//! by the reverse.

use super::RefSide;
use super::bridge::{Entered, ref_streams};
use super::rules::RefFill;
use crate::activity::{Active, Const, Dual, Duplicated};
use crate::autodiff::raw::bridge::{Streams, finished};
use crate::autodiff::raw::tapes::Tape;
use crate::autodiff::{AdError, Bridge, record};
use crate::element::Differentiable;
use crate::memory::{ShadowMemory, ShadowRead};
use crate::rules::{FillRule, RegionTape};
use std::borrow::BorrowMut;

/// The fill's rule object and its destination opened.
///
/// # Safety
/// As `RefSide::open_mut` for `dst`.
#[allow(clippy::type_complexity)]
unsafe fn prepare_fill<'h, D, R>(
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
) -> Result<(Entered, Streams<'h>, R, (D::Mut, Option<D::Mut>)), AdError>
where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    let entered = Entered::new()?;
    // SAFETY: the contract.
    let st = unsafe { ref_streams::<D, D>(&dst, None)? };
    let RefFill(rule) = make(st)?;
    // SAFETY: the contract.
    let d = unsafe { dst.open_mut("dst")? };
    Ok((entered, st, rule, d))
}

/// The `extern "C"` primal of a fill of an array.
///
/// # Safety
/// As [`array_primal`](super::array_primal) for `dst`.
pub unsafe fn array_fill_primal<'h, D, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
    v: <D::Buf as ShadowRead>::Elem,
) where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    let _ = record((name, Bridge::Primal), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, (mut p, _)) = unsafe { prepare_fill(make, dst)? };
        let _unwind = st.wait_on_unwind();
        let ran = rule
            .forward(Const(p.borrow_mut()), Const(v))
            .map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// The forward rule of a fill of an array: `d_dst[R] ← dv`.
///
/// # Safety
/// As [`array_fwd`](super::array_fwd) for `dst`.
pub unsafe fn array_fill_fwd<'h, D, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
    (v, dv): (<D::Buf as ShadowRead>::Elem, <D::Buf as ShadowRead>::Elem),
) where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    let _ = record((name, Bridge::Fwd), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, (mut p, d)) = unsafe { prepare_fill(make, dst)? };
        let _unwind = st.wait_on_unwind();
        let ran = match d {
            Some(mut d) => rule.forward(
                Duplicated::new(p.borrow_mut(), d.borrow_mut()),
                Dual::new(v, dv),
            ),
            None => rule.forward(Const(p.borrow_mut()), Const(v)),
        };
        finished(st, ran.map_err(AdError::Rule))
    });
}

/// The tape of a bridged fill of an array, and whether the destination was active.
struct FillTape<Tp> {
    tape: Tp,
    active: bool,
}

/// The augmented primal of a fill of an array (the value has no shadow slot: see `fill.rs`).
///
/// # Safety
/// As [`array_aug`](super::array_aug) for `dst`.
pub unsafe fn array_fill_aug<'h, D, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
    v: <D::Buf as ShadowRead>::Elem,
) -> Tape
where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    record((name, Bridge::Aug), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, (mut p, d)) = unsafe { prepare_fill(make, dst)? };
        let _unwind = st.wait_on_unwind();
        let active = d.is_some();
        let tape = match d {
            Some(mut d) => {
                rule.augmented_primal(Duplicated::new(p.borrow_mut(), d.borrow_mut()), Active(v))
            }
            None => rule.augmented_primal(Const(p.borrow_mut()), Active(v)),
        };
        let tape = finished(st, tape.map_err(AdError::Rule))?;
        Ok(Box::new(FillTape { tape, active }) as _)
    })
}

/// The reverse of a fill of an array: zeroes `d_dst[R]` and returns `d_v = Σ_R d_dst` (zero
/// after an error, which is recorded).
///
/// # Safety
/// As [`array_rev`](super::array_rev) for `dst`.
pub unsafe fn array_fill_rev<'h, D, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
    v: <D::Buf as ShadowRead>::Elem,
    tape: Tape,
) -> <D::Buf as ShadowRead>::Elem
where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    type Tp<D> = RegionTape<<D as ShadowRead>::Elem>;
    record((name, Bridge::Rev), || {
        let FillTape { tape, active } = *tape
            .ok_or(AdError::NoTape)?
            .downcast::<FillTape<Tp<D::Buf>>>()
            .map_err(|_| AdError::TapeOrder)?;
        // SAFETY: this function's contract.
        let (_e, st, mut rule, (mut p, d)) = unsafe { prepare_fill(make, dst)? };
        let _unwind = st.wait_on_unwind();
        if d.is_some() != active {
            return Err(AdError::ActivityChanged { what: "dst" });
        }
        let dv = match d {
            Some(mut d) => rule
                .reverse(
                    tape,
                    Duplicated::new(p.borrow_mut(), d.borrow_mut()),
                    Active(v),
                )
                .map(|[dv]| dv),
            None => rule
                .reverse(tape, Const(p.borrow_mut()), Active(v))
                .map(|[]| Differentiable::zero()),
        };
        finished(st, dv.map_err(AdError::Rule))
    })
    .unwrap_or_else(Differentiable::zero)
}
