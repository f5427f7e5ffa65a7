//! The bodies of slice copy rules: `dst` and `src` are references to buffers (`&mut X` ← `&Y`),
//! every shadow of its primal's length.

use super::{Call, CopyTape, PrimalOutcome, lane_name, plan_lanes};
use crate::activity::{DstArg, SameWidth, SrcArg};
use crate::device::probe;
use crate::error::{Result, check_len, check_len_with};
use crate::memory::{MemoryKind, ShadowMemory, ShadowRead};
use crate::ops::{On, Source, refuse_call_in_capture};

/// Checks a slice rule's arguments: primal lengths agree, every shadow has its primal's length,
/// and the buffers overlap only as [`Call::check`] allows. Returns `n` and the call.
fn check_slices<X, Y, D, S>(on: On<'_>, dst: &D, src: &S) -> Result<(usize, Call)>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
{
    let _p = probe::span("check_slices");
    let n = src.primal().len();
    check_len("the primal `dst`", n, dst.primal().len())?;
    let mut lanes = Vec::with_capacity(D::WIDTH.max(S::WIDTH));
    let mut host =
        dst.primal().kind() == MemoryKind::Host || src.primal().kind() == MemoryKind::Host;
    let lanes_p = probe::span("check_slices: lanes (lengths, names, regions)");
    for k in 0..D::WIDTH.max(S::WIDTH) {
        let (dd, ds) = (dst.lane(k), src.lane(k));
        if let Some(dd) = dd {
            check_len_with(|| lane_name("dst", k), n, dd.len())?;
            host |= dd.kind() == MemoryKind::Host;
        }
        if let Some(ds) = ds {
            check_len_with(|| lane_name("src", k), n, ds.len())?;
            host |= ds.kind() == MemoryKind::Host;
        }
        lanes.push((dd.map(ShadowRead::region), ds.map(ShadowRead::region)));
    }
    drop(lanes_p);
    let home = dst.primal().home_stream().or(src.primal().home_stream());
    refuse_call_in_capture(
        on,
        home.map(|s| &**s),
        "a copy rule on pageable host memory",
        host,
    )?;
    let call = Call {
        dst: dst.primal().region(),
        src: src.primal().region(),
        lanes,
    };
    {
        let _p = probe::span("Call::check (overlap)");
        call.check()?;
    }
    Ok((n, call))
}

/// Forward (tangent) rule of a slice copy `dst ← src`: runs the primal (unless `dst` is
/// `DuplicatedOnly`), then for each lane `k`: `d_dst[k] ← d_src[k]` through the primal copy itself
/// (same direction, same stream), or `d_dst[k] ← 0` when `src` is `Const`.
pub fn copy_forward<X, Y, D, S, F, R>(on: On<'_>, mut dst: D, src: S, mut primal: F) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
    D::Width: SameWidth<S::Width>,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    let (_, call) = check_slices(on, &dst, &src)?;
    let _p = probe::span("forward after checks");
    // Plans hold no borrow of the buffers: they are made from shared views, then run on the
    // exclusive ones, which are the same buffers.
    let plans = {
        let lanes = (0..D::WIDTH).map(|k| (dst.lane(k), src.lane(k)));
        plan_lanes::<X, Y>(on, lanes, false)?
    };
    if D::PRIMAL_NEEDED {
        primal(dst.primal_mut(), src.primal()).into_result()?;
    }
    for (k, plan) in plans.into_iter().enumerate() {
        let Some(dd) = dst.lane_mut(k) else { continue };
        match (plan, src.lane(k)) {
            (Some(p), _) => p.run::<X, X>(dd, Source::None)?,
            (None, Some(_)) if call.lanes[k].0 == call.lanes[k].1 => {} // self-copy: identity
            (None, Some(ds)) => primal(dd, ds).into_result()?,
            (None, None) => {}
        }
    }
    Ok(())
}

/// Augmented primal of a slice copy: checks, runs the primal (unless `dst` is `DuplicatedOnly`),
/// and returns the tape for [`copy_reverse`].
pub fn copy_augmented_primal<X, Y, D, S, F, R>(
    on: On<'_>,
    mut dst: D,
    src: S,
    mut primal: F,
) -> Result<CopyTape>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
    D::Width: SameWidth<S::Width>,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    let (n, call) = check_slices(on, &dst, &src)?;
    let _p = probe::span("augmented primal: primal");
    if D::PRIMAL_NEEDED {
        primal(dst.primal_mut(), src.primal()).into_result()?;
    }
    Ok(CopyTape {
        n,
        dst_offset: 0,
        src_offset: 0,
        width: D::WIDTH,
        primal_ran: D::PRIMAL_NEEDED,
        call: call.fingerprint(),
    })
}

/// Reverse of a slice copy, for each lane `k` in order on the copy's stream: if `src` is active,
/// `d_src[k] += d_dst[k]`; then `d_dst[k] ← 0` (fused into one pass). A self-copy is the identity.
/// Every lane is planned (checked and routed) before the first one runs.
pub fn copy_reverse<X, Y, D, S>(on: On<'_>, tape: CopyTape, mut dst: D, mut src: S) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
    D::Width: SameWidth<S::Width>,
{
    let (n, call) = check_slices(on, &dst, &src)?;
    tape.check(&CopyTape {
        n,
        dst_offset: 0,
        src_offset: 0,
        width: D::WIDTH,
        primal_ran: tape.primal_ran,
        call: call.fingerprint(),
    })?;
    let plans = {
        let _p = probe::span("reverse: plan_lanes");
        let lanes = (0..D::WIDTH).map(|k| (dst.lane(k), src.lane(k)));
        plan_lanes::<X, Y>(on, lanes, true)?
    };
    let _p = probe::span("reverse: run");
    for (k, plan) in plans.into_iter().enumerate() {
        let Some(plan) = plan else { continue };
        let Some(dd) = dst.lane_mut(k) else { continue };
        match src.lane_mut(k) {
            Some(ds) => plan.run(ds, Source::Take(dd))?,
            None => plan.run::<X, X>(dd, Source::None)?,
        }
    }
    Ok(())
}
