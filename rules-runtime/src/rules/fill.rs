//! Bodies of one-buffer region rules: `memset` (a bit pattern, not differentiable) and `fill`
//! with a value taken by value (`Const`, `Dual` in forward mode, `Active` in reverse mode).
//!
//! - memset: forward and reverse `d_dst[k][R] ← 0`.
//! - fill: forward `d_dst[k][R] ← d_v[k]` (0 for a `Const` value); reverse returns
//!   `d_v[k] = Σ_R d_dst[k]` per lane (a deterministic sum, see `sum_region`), then
//!   `d_dst[k][R] ← 0`.
//!
//! With `restore`, the augmented primal saves the old destination box and the reverse writes it
//! back after the shadow work.

use super::checked::{self, RuleNames, Which};
use super::copy::PrimalOutcome;
use super::region::{Boxes, Checked, Dst, Kind, Raw, RawRegion, RegionTape, Side, check_call};
use crate::activity::{Activity, DstArg, DstPtr, ForwardValue, ReverseValue, SameWidth};
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::raw::RawShadow;
use crate::memory::{ShadowMemory, ShadowRead};
use crate::ops::region::{fill_region, zero_region};
use crate::ops::{On, SavedRegion, restore_region, save_region, sum_region};

/// The stream a call without one named is ordered on: the destination primal's own.
fn home<S: Side>(dst: &S) -> Option<&cudarc::driver::CudaStream> {
    dst.primal().home_stream().map(|s| &**s)
}

/// A call on a destination only.
fn check_dst<D: Side>(on: On<'_>, boxes: Boxes, dst: &D, restore: bool) -> Result<Checked> {
    check_call::<D, D>(on, boxes, dst, None, restore)
}

/// The forward lanes: `d_dst[k][R] ← tangent(k)`, or 0.
fn forward_lanes<D: Side>(
    on: On<'_>,
    c: &Checked,
    dst: &mut D,
    tangent: impl Fn(usize) -> Option<<D::Buf as crate::memory::ShadowRead>::Elem>,
) -> Result<()> {
    for k in 0..dst.width() {
        let Some(dd) = dst.lane_mut(k) else { continue };
        match tangent(k) {
            Some(t) => fill_region(on, dd, c.dst, t)?,
            None => zero_region(on, dd, c.dst)?,
        }
    }
    Ok(())
}

/// The reverse lanes: with `sum`, each lane's sum over the box first (in lane order), then every
/// lane's box zeroed.
fn reverse_lanes<D: Side>(
    on: On<'_>,
    c: &Checked,
    dst: &mut D,
    sum: bool,
) -> Result<Vec<<D::Buf as crate::memory::ShadowRead>::Elem>> {
    let mut sums = Vec::new();
    if sum {
        for k in 0..dst.width() {
            if let Some(dd) = dst.lane(k) {
                sums.push(sum_region(on, dd, c.dst)?);
            }
        }
    }
    for k in 0..dst.width() {
        if let Some(dd) = dst.lane_mut(k) {
            zero_region(on, dd, c.dst)?;
        }
    }
    Ok(sums)
}

/// Forward rule of a memset (slices): runs the primal (unless `dst` is `DuplicatedOnly`), then
/// `d_dst[k][R] ← 0` for each lane.
pub fn memset_forward<X, D, F, R>(
    on: On<'_>,
    (boxes, names): (Boxes, RuleNames),
    dst: D,
    mut primal: F,
) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    D: DstArg<X>,
    F: FnMut(&mut X) -> R,
    R: PrimalOutcome,
{
    let mut dst = Dst::new(dst);
    let c = check_dst(on, boxes, &dst, false)?;
    checked::refuse_capture(on, home(&dst))?;
    if D::PRIMAL_NEEDED {
        super::in_place(names.dst, dst.primal_mut(), |d| primal(d).into_result())?;
        checked::repeated(on, names, Which::Primal, dst.primal(), c.dst)?;
    }
    forward_lanes(on, &c, &mut dst, |_| None)
}

/// Augmented primal of a memset (slices): checks, saves the box with `restore`, runs the primal.
pub fn memset_augmented_primal<X, D, F, R>(
    on: On<'_>,
    (boxes, names): (Boxes, RuleNames),
    restore: bool,
    dst: D,
    mut primal: F,
) -> Result<RegionTape<X::Elem>>
where
    X: ShadowMemory + ?Sized,
    D: DstArg<X>,
    F: FnMut(&mut X) -> R,
    R: PrimalOutcome,
{
    let mut dst = Dst::new(dst);
    let c = check_dst(on, boxes, &dst, restore)?;
    checked::refuse_capture(on, home(&dst))?;
    let saved = save_if(on, restore && D::PRIMAL_NEEDED, dst.primal(), &c)?;
    if D::PRIMAL_NEEDED {
        super::in_place(names.dst, dst.primal_mut(), |d| primal(d).into_result())?;
        checked::repeated(on, names, Which::Primal, dst.primal(), c.dst)?;
    }
    Ok(RegionTape::new(&c, D::WIDTH, D::PRIMAL_NEEDED, (Kind::Memset, restore)).with_saved(saved))
}

/// Reverse of a memset (slices): `d_dst[k][R] ← 0` for each lane, then the restore if asked.
pub fn memset_reverse<X, D>(
    on: On<'_>,
    (boxes, restore): (Boxes, bool),
    tape: RegionTape<X::Elem>,
    dst: D,
) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    D: DstArg<X>,
{
    let mut dst = Dst::new(dst);
    let c = check_dst(on, boxes, &dst, tape.restores())?;
    let saved = tape.check(&c, D::WIDTH, (Kind::Memset, restore))?;
    reverse_lanes(on, &c, &mut dst, false)?;
    if let Some(mut s) = saved {
        restore_region(on, dst.primal_mut(), c.dst, &mut s)?;
    }
    Ok(())
}

/// Forward rule of a fill by value (slices): runs the primal with the value (unless `dst` is
/// `DuplicatedOnly`), then `d_dst[k][R] ← d_v[k]` for each lane (0 for a `Const` value).
pub fn fill_forward<X, D, V, F, R>(
    on: On<'_>,
    (boxes, names): (Boxes, RuleNames),
    dst: D,
    value: V,
    mut primal: F,
) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    D: DstArg<X>,
    V: ForwardValue<X::Elem>,
    D::Width: SameWidth<V::Width>,
    F: FnMut(&mut X, X::Elem) -> R,
    R: PrimalOutcome,
{
    let mut dst = Dst::new(dst);
    let c = check_dst(on, boxes, &dst, false)?;
    checked::refuse_capture(on, home(&dst))?;
    if D::PRIMAL_NEEDED {
        super::in_place(names.dst, dst.primal_mut(), |d| {
            primal(d, value.value()).into_result()
        })?;
        checked::filled(on, names, Which::Primal, dst.primal(), c.dst, value.value())?;
    }
    forward_lanes(on, &c, &mut dst, |k| value.tangent(k))
}

/// Augmented primal of a fill by value (slices).
pub fn fill_augmented_primal<X, D, V, F, R>(
    on: On<'_>,
    (boxes, names): (Boxes, RuleNames),
    restore: bool,
    dst: D,
    value: V,
    mut primal: F,
) -> Result<RegionTape<X::Elem>>
where
    X: ShadowMemory + ?Sized,
    D: DstArg<X>,
    V: ReverseValue<X::Elem>,
    F: FnMut(&mut X, X::Elem) -> R,
    R: PrimalOutcome,
{
    let mut dst = Dst::new(dst);
    let c = check_dst(on, boxes, &dst, restore)?;
    checked::refuse_capture(on, home(&dst))?;
    let saved = save_if(on, restore && D::PRIMAL_NEEDED, dst.primal(), &c)?;
    if D::PRIMAL_NEEDED {
        super::in_place(names.dst, dst.primal_mut(), |d| {
            primal(d, value.value()).into_result()
        })?;
        checked::filled(on, names, Which::Primal, dst.primal(), c.dst, value.value())?;
    }
    Ok(RegionTape::new(&c, D::WIDTH, D::PRIMAL_NEEDED, (Kind::Fill, restore)).with_saved(saved))
}

/// Reverse of a fill by value (slices): for an `Active` value, `d_v[k] = Σ_R d_dst[k]` for each
/// lane, returned as `[T; N]`; then `d_dst[k][R] ← 0` for each lane; then the restore if asked.
pub fn fill_reverse<X, D, V>(
    on: On<'_>,
    (boxes, restore): (Boxes, bool),
    tape: RegionTape<X::Elem>,
    dst: D,
    value: V,
) -> Result<V::Gradient<D::Width>>
where
    X: ShadowMemory + ?Sized,
    D: DstArg<X>,
    V: ReverseValue<X::Elem>,
{
    let _ = value;
    let mut dst = Dst::new(dst);
    let c = check_dst(on, boxes, &dst, tape.restores())?;
    let saved = tape.check(&c, D::WIDTH, (Kind::Fill, restore))?;
    let sums = reverse_lanes(on, &c, &mut dst, V::ACTIVE)?;
    if let Some(mut s) = saved {
        restore_region(on, dst.primal_mut(), c.dst, &mut s)?;
    }
    Ok(gradient::<X::Elem, D, V>(&sums))
}

fn gradient<T: Differentiable, D: Activity, V: ReverseValue<T>>(
    sums: &[T],
) -> V::Gradient<D::Width> {
    V::gradient::<D::Width>(|k| sums.get(k).copied().unwrap_or_else(T::zero))
}

fn save_if<B: ShadowMemory + ?Sized>(
    on: On<'_>,
    save: bool,
    buf: &B,
    c: &Checked,
) -> Result<Option<SavedRegion<B::Elem>>> {
    save.then(|| save_region(on, buf, c.dst)).transpose()
}

/// Forward rule of a pointer memset; see [`memset_forward`], on the call's views (made by the
/// raw rule's method under its `unsafe` contract).
pub(crate) fn ptr_memset_forward<T, D, F, R>(
    on: On<'_>,
    (shape, names): (RawRegion, RuleNames),
    mut d: Raw<T>,
    dst: &D,
    mut primal: F,
) -> Result<()>
where
    T: Differentiable,
    D: DstPtr<T>,
    F: FnMut(*mut T) -> R,
    R: PrimalOutcome,
{
    let c = check_dst(on, shape.boxes(), &d, false)?;
    checked::refuse_capture(on, None)?;
    if D::PRIMAL_NEEDED {
        primal(dst.primal()).into_result()?;
        checked::repeated(on, names, Which::Primal, &d.primal, c.dst)?;
    }
    forward_lanes(on, &c, &mut d, |_| None)
}

/// Augmented primal of a pointer memset; see [`memset_augmented_primal`], on the call's views.
pub(crate) fn ptr_memset_augmented_primal<T, D, F, R>(
    on: On<'_>,
    (shape, names): (RawRegion, RuleNames),
    restore: bool,
    d: Raw<T>,
    dst: &D,
    mut primal: F,
) -> Result<RegionTape<T>>
where
    T: Differentiable,
    D: DstPtr<T>,
    F: FnMut(*mut T) -> R,
    R: PrimalOutcome,
{
    let c = check_dst(on, shape.boxes(), &d, restore)?;
    checked::refuse_capture(on, None)?;
    let saved = save_if::<RawShadow<T>>(on, restore && D::PRIMAL_NEEDED, &d.primal, &c)?;
    if D::PRIMAL_NEEDED {
        primal(dst.primal()).into_result()?;
        checked::repeated(on, names, Which::Primal, &d.primal, c.dst)?;
    }
    Ok(RegionTape::new(&c, D::WIDTH, D::PRIMAL_NEEDED, (Kind::Memset, restore)).with_saved(saved))
}

/// Reverse of a pointer memset; see [`memset_reverse`], on the call's views.
pub(crate) fn ptr_memset_reverse<T, D>(
    on: On<'_>,
    (shape, restore): (RawRegion, bool),
    tape: RegionTape<T>,
    mut d: Raw<T>,
) -> Result<()>
where
    T: Differentiable,
    D: DstPtr<T>,
{
    let c = check_dst(on, shape.boxes(), &d, tape.restores())?;
    let saved = tape.check(&c, D::WIDTH, (Kind::Memset, restore))?;
    reverse_lanes(on, &c, &mut d, false)?;
    if let Some(mut s) = saved {
        restore_region(on, &mut d.primal, c.dst, &mut s)?;
    }
    Ok(())
}

/// Forward rule of a pointer fill by value; see [`fill_forward`], on the call's views.
pub(crate) fn ptr_fill_forward<T, D, V, F, R>(
    on: On<'_>,
    (shape, names): (RawRegion, RuleNames),
    mut d: Raw<T>,
    dst: &D,
    value: V,
    mut primal: F,
) -> Result<()>
where
    T: Differentiable,
    D: DstPtr<T>,
    V: ForwardValue<T>,
    F: FnMut(*mut T, T) -> R,
    R: PrimalOutcome,
{
    let c = check_dst(on, shape.boxes(), &d, false)?;
    checked::refuse_capture(on, None)?;
    if D::PRIMAL_NEEDED {
        primal(dst.primal(), value.value()).into_result()?;
        checked::filled(on, names, Which::Primal, &d.primal, c.dst, value.value())?;
    }
    forward_lanes(on, &c, &mut d, |k| value.tangent(k))
}

/// Augmented primal of a pointer fill by value; see [`fill_augmented_primal`], on the call's
/// views.
pub(crate) fn ptr_fill_augmented_primal<T, D, V, F, R>(
    on: On<'_>,
    (shape, restore, names): (RawRegion, bool, RuleNames),
    d: Raw<T>,
    dst: &D,
    value: V,
    mut primal: F,
) -> Result<RegionTape<T>>
where
    T: Differentiable,
    D: DstPtr<T>,
    V: ReverseValue<T>,
    F: FnMut(*mut T, T) -> R,
    R: PrimalOutcome,
{
    let c = check_dst(on, shape.boxes(), &d, restore)?;
    checked::refuse_capture(on, None)?;
    let saved = save_if::<RawShadow<T>>(on, restore && D::PRIMAL_NEEDED, &d.primal, &c)?;
    if D::PRIMAL_NEEDED {
        primal(dst.primal(), value.value()).into_result()?;
        checked::filled(on, names, Which::Primal, &d.primal, c.dst, value.value())?;
    }
    Ok(RegionTape::new(&c, D::WIDTH, D::PRIMAL_NEEDED, (Kind::Fill, restore)).with_saved(saved))
}

/// Reverse of a pointer fill by value; see [`fill_reverse`], on the call's views.
pub(crate) fn ptr_fill_reverse<T, D, V>(
    on: On<'_>,
    (shape, restore): (RawRegion, bool),
    tape: RegionTape<T>,
    mut d: Raw<T>,
) -> Result<V::Gradient<D::Width>>
where
    T: Differentiable,
    D: DstPtr<T>,
    V: ReverseValue<T>,
{
    let c = check_dst(on, shape.boxes(), &d, tape.restores())?;
    let saved = tape.check(&c, D::WIDTH, (Kind::Fill, restore))?;
    let sums = reverse_lanes(on, &c, &mut d, V::ACTIVE)?;
    if let Some(mut s) = saved {
        restore_region(on, &mut d.primal, c.dst, &mut s)?;
    }
    Ok(gradient::<T, D, V>(&sums))
}
