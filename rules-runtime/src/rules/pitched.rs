//! Bodies of two-buffer region rules: pitched copies (`copy2d`, `copy3d`), a `copy` with
//! `restore` (a copy of one row), and a `fill` whose value lives in a one-element buffer.
//!
//! Forward: the primal runs on the primals (unless `dst` is `DuplicatedOnly`, or the copy is the
//! same box of the same memory), then for each lane `k` the primal runs again on the shadows
//! (`d_dst[k][R] ← d_src[k][R']`, same primitive, same stream), or `d_dst[k][R] ← 0` when `src`
//! is `Const`. Reverse, for each lane on the copy's stream: `d_src[k][R'] += d_dst[k][R]` fused
//! with `d_dst[k][R] ← 0` (for a value buffer: `d_v[k] += Σ_R d_dst[k]`, then the zeroing); then,
//! with `restore`, the old primal box is written back. Padding between rows is never touched.

use super::checked::{self, RuleNames, Which};
use super::copy::PrimalOutcome;
use super::region::{Boxes, Checked, Dst, Kind, Raw, RawRegion, RegionTape, Side, Src, check_call};
use crate::activity::{DstArg, DstPtr, SameWidth, SrcArg, SrcPtr};
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::{ShadowMemory, ShadowRead};
use crate::ops::region::{
    accumulate_and_zero_region, accumulate_region, check_pair, fill_region, zero_region,
};
use crate::ops::{
    On, accumulate_sum_region, refuse_call_in_capture, restore_region, save_region, sum_region,
};

/// In the checked mode, after a call of the primitive: `dst[R] == src[R']`, or, from a value
/// buffer, `dst[R]` filled with its one element.
fn check_primal<X, Y>(
    on: On<'_>,
    names: RuleNames,
    which: Which,
    (dst, src): (&X, &Y),
    c: &Checked,
    value: bool,
) -> Result<()>
where
    X: ShadowRead + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
{
    if value {
        checked::filled_from(on, names, which, (dst, c.dst), (src, c.src))
    } else {
        checked::copied(on, names, which, (dst, c.dst), (src, c.src))
    }
}

/// The stream a call without one named is ordered on: the destination primal's own.
fn home<S: Side>(dst: &S) -> Option<&cudarc::driver::CudaStream> {
    dst.primal().home_stream().map(|s| &**s)
}

/// The reverse's shadow work for one lane, then nothing else: the lanes run in order.
fn reverse_lane<X, Y>(
    on: On<'_>,
    c: &Checked,
    value: bool,
    dd: &mut X,
    ds: Option<&mut Y>,
) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
{
    match ds {
        Some(ds) if value => {
            accumulate_sum_region(on, ds, &*dd, c.dst)?;
            zero_region(on, dd, c.dst)
        }
        Some(ds) => accumulate_and_zero_region(on, ds, c.src, dd, c.dst),
        None => zero_region(on, dd, c.dst),
    }
}

/// Forward rule of a two-buffer region rule (slices); see the module docs. A source shadow the
/// primitive cannot take (of another type than the primal, as `&mut CudaViewMut` for a
/// `&CudaView` source) is copied by the runtime: `d_dst[k][R] ← 0`, then
/// `d_dst[k][R] += d_src[k][R']`; from a value buffer, `d_dst[k][R] ← d_v[k]` (read on the host,
/// so the stream is waited for, and refused in a graph capture).
pub fn region_forward<X, Y, D, S, F, R>(
    on: On<'_>,
    (boxes, names): (Boxes, RuleNames),
    dst: D,
    src: S,
    mut primal: F,
) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y, Shadow: ShadowMemory<Elem = X::Elem>>,
    D::Width: SameWidth<S::Width>,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    let (mut dst, src) = (Dst::new(dst), Src::new(src));
    let c = check_call(on, boxes, &dst, Some(&src), false)?;
    // The lanes the runtime copies: checked here, before the first write, as the others were.
    for k in 0..D::WIDTH {
        if let (Some(dd), Some(ds), None) = (dst.lane(k), src.lane(k), src.lane_as_primal(k)) {
            if boxes.value {
                let home = ds.home_stream().map(|s| &**s);
                refuse_call_in_capture(
                    on,
                    home,
                    "the forward of a fill from a value buffer whose shadows are of another type",
                    true,
                )?;
            } else {
                check_pair(on, dd, ds)?;
            }
        }
    }
    checked::refuse_capture(on, home(&dst))?;
    if D::PRIMAL_NEEDED && !c.primal_same {
        super::in_place(names.dst, dst.primal_mut(), |d| {
            primal(d, src.primal()).into_result()
        })?;
        check_primal(
            on,
            names,
            Which::Primal,
            (dst.primal(), src.primal()),
            &c,
            boxes.value,
        )?;
    }
    for k in 0..D::WIDTH {
        let Some(dd) = dst.lane_mut(k) else { continue };
        match (src.lane(k), src.lane_as_primal(k)) {
            (Some(_), _) if c.lane_same[k] => {} // a self-copy: the identity
            (Some(_), Some(ds)) => {
                super::in_place(names.dst, dd, |d| primal(d, ds).into_result())?;
                check_primal(on, names, Which::Lane(k), (&*dd, ds), &c, boxes.value)?;
            }
            (Some(ds), None) if boxes.value => {
                let v = sum_region(on, ds, c.src)?;
                fill_region(on, dd, c.dst, v)?;
            }
            (Some(ds), None) => {
                zero_region(on, dd, c.dst)?;
                accumulate_region(on, dd, c.dst, ds, c.src)?;
            }
            (None, _) => zero_region(on, dd, c.dst)?,
        }
    }
    Ok(())
}

/// Augmented primal of a two-buffer region rule (slices): checks, saves the destination's box
/// when `restore` asks, runs the primal, and returns the tape for [`region_reverse`].
pub fn region_augmented_primal<X, Y, D, S, F, R>(
    on: On<'_>,
    (boxes, names): (Boxes, RuleNames),
    restore: bool,
    dst: D,
    src: S,
    mut primal: F,
) -> Result<RegionTape<X::Elem>>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y, Shadow: ShadowMemory<Elem = X::Elem>>,
    D::Width: SameWidth<S::Width>,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    let (mut dst, src) = (Dst::new(dst), Src::new(src));
    let c = check_call(on, boxes, &dst, Some(&src), restore)?;
    let run = D::PRIMAL_NEEDED && !c.primal_same;
    checked::refuse_capture(on, home(&dst))?;
    let saved = match restore && run {
        true => Some(save_region(on, dst.primal(), c.dst)?),
        false => None,
    };
    if run {
        super::in_place(names.dst, dst.primal_mut(), |d| {
            primal(d, src.primal()).into_result()
        })?;
        check_primal(
            on,
            names,
            Which::Primal,
            (dst.primal(), src.primal()),
            &c,
            boxes.value,
        )?;
    }
    Ok(RegionTape::new(&c, D::WIDTH, run, (Kind::Pair, restore)).with_saved(saved))
}

/// Reverse of a two-buffer region rule (slices); see the module docs. Every lane is checked and
/// routed before the first one runs.
pub fn region_reverse<X, Y, D, S>(
    on: On<'_>,
    (boxes, restore): (Boxes, bool),
    tape: RegionTape<X::Elem>,
    dst: D,
    src: S,
) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y, Shadow: ShadowMemory<Elem = X::Elem>>,
    D::Width: SameWidth<S::Width>,
{
    let (mut dst, mut src) = (Dst::new(dst), Src::new(src));
    let c = check_call(on, boxes, &dst, Some(&src), tape.restores())?;
    let saved = tape.check(&c, D::WIDTH, (Kind::Pair, restore))?;
    for k in 0..D::WIDTH {
        let Some(dd) = dst.lane_mut(k) else { continue };
        reverse_lane(on, &c, boxes.value, dd, src.lane_mut(k))?;
    }
    if let Some(mut saved) = saved {
        restore_region(on, dst.primal_mut(), c.dst, &mut saved)?;
    }
    Ok(())
}

/// Forward rule of a pointer region copy; see [`region_forward`], on the call's views (made by
/// the raw rule's method under its `unsafe` contract). `primal(dst, src)` runs the user's copy
/// with the call's offsets, pitches and extents.
pub(crate) fn ptr_region_forward<T, D, S, F, R>(
    on: On<'_>,
    (shape, names): (RawRegion, RuleNames),
    (mut d, s): (Raw<T>, Raw<T>),
    dst: &D,
    src: &S,
    mut primal: F,
) -> Result<()>
where
    T: Differentiable,
    D: DstPtr<T>,
    S: SrcPtr<T>,
    F: FnMut(*mut T, *const T) -> R,
    R: PrimalOutcome,
{
    let c = check_call(on, shape.boxes(), &d, Some(&s), false)?;
    checked::refuse_capture(on, None)?;
    if D::PRIMAL_NEEDED && !c.primal_same {
        primal(dst.primal(), src.primal()).into_result()?;
        check_primal(on, names, Which::Primal, (&d.primal, &s.primal), &c, false)?;
    }
    for k in 0..D::WIDTH {
        let (Some(pd), Some(dd)) = (dst.lane(k), d.lane_mut(k)) else {
            continue;
        };
        match src.lane(k) {
            Some(_) if c.lane_same[k] => {}
            Some(ps) => {
                primal(pd, ps).into_result()?;
                if let Some(ds) = s.lane(k) {
                    check_primal(on, names, Which::Lane(k), (&*dd, ds), &c, false)?;
                }
            }
            None => zero_region(on, dd, c.dst)?,
        }
    }
    Ok(())
}

/// Augmented primal of a pointer region copy; see [`region_augmented_primal`], on the call's
/// views.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ptr_region_augmented_primal<T, D, S, F, R>(
    on: On<'_>,
    (shape, names): (RawRegion, RuleNames),
    restore: bool,
    (d, s): (Raw<T>, Raw<T>),
    dst: &D,
    src: &S,
    mut primal: F,
) -> Result<RegionTape<T>>
where
    T: Differentiable,
    D: DstPtr<T>,
    S: SrcPtr<T>,
    F: FnMut(*mut T, *const T) -> R,
    R: PrimalOutcome,
{
    let c = check_call(on, shape.boxes(), &d, Some(&s), restore)?;
    let run = D::PRIMAL_NEEDED && !c.primal_same;
    checked::refuse_capture(on, None)?;
    let saved = match restore && run {
        true => Some(save_region(on, &d.primal, c.dst)?),
        false => None,
    };
    if run {
        primal(dst.primal(), src.primal()).into_result()?;
        check_primal(on, names, Which::Primal, (&d.primal, &s.primal), &c, false)?;
    }
    Ok(RegionTape::new(&c, D::WIDTH, run, (Kind::Pair, restore)).with_saved(saved))
}

/// Reverse of a pointer region copy; see [`region_reverse`], on the call's views.
pub(crate) fn ptr_region_reverse<T, D>(
    on: On<'_>,
    (shape, restore): (RawRegion, bool),
    tape: RegionTape<T>,
    (mut d, mut s): (Raw<T>, Raw<T>),
) -> Result<()>
where
    T: Differentiable,
    D: DstPtr<T>,
{
    let c = check_call(on, shape.boxes(), &d, Some(&s), tape.restores())?;
    let saved = tape.check(&c, D::WIDTH, (Kind::Pair, restore))?;
    for k in 0..D::WIDTH {
        let Some(dd) = d.lane_mut(k) else { continue };
        reverse_lane(on, &c, false, dd, s.lane_mut(k))?;
    }
    if let Some(mut saved) = saved {
        restore_region(on, &mut d.primal, c.dst, &mut saved)?;
    }
    Ok(())
}
