//! The bodies of slice copy rules: `dst` and `src` are references to buffers (`&mut X` ← `&Y`),
//! every shadow of its primal's length. A source's primal is only read (`Y: ShadowRead`: a
//! read-only `CudaView` is one); its shadows are written, of the activity's `Shadow` type.

use super::{Call, CopyTape, PrimalOutcome, lane_name, plan_lanes};
use crate::activity::{DstArg, SameWidth, SrcArg};
use crate::driver::probe;
use crate::error::{Result, check_len, check_len_with};
use crate::memory::{MemoryKind, ShadowMemory, ShadowRead};
use crate::ops::{self, On, Op, Source, refuse_call_in_capture};
use crate::rules::checked::{self, RuleNames, Which};

/// Checks a slice rule's arguments: primal lengths agree, every shadow has its primal's length,
/// and the buffers overlap only as [`Call::check`] allows. Returns `n` and the call.
fn check_slices<X, Y, D, S>(on: On<'_>, dst: &D, src: &S) -> Result<(usize, Call)>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y, Shadow: ShadowMemory<Elem = X::Elem>>,
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

/// The stream a call without one named is ordered on: a primal's own.
fn home<'a, X, Y, D, S>(dst: &'a D, src: &'a S) -> Option<&'a cudarc::driver::CudaStream>
where
    X: ShadowMemory + ?Sized + 'a,
    Y: ShadowRead<Elem = X::Elem> + ?Sized + 'a,
    D: DstArg<X>,
    S: SrcArg<Y>,
{
    let home = dst.primal().home_stream().or(src.primal().home_stream());
    home.map(|s| &**s)
}

/// Forward (tangent) rule of a slice copy `dst ← src`: runs the primal (unless `dst` is
/// `DuplicatedOnly`), then for each lane `k`: `d_dst[k] ← d_src[k]` through the primal copy itself
/// (same direction, same stream), or `d_dst[k] ← 0` when `src` is `Const`. A source shadow the
/// primitive cannot take (of another type than the primal, as `&mut CudaViewMut` for a
/// `&CudaView` source) is copied by the runtime instead: `d_dst[k] ← 0`, then
/// `d_dst[k] += d_src[k]` (equal values; a `-0.0` arrives as `+0.0`).
pub fn copy_forward<X, Y, D, S, F, R>(
    on: On<'_>,
    names: RuleNames,
    mut dst: D,
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
    let (_, call) = check_slices(on, &dst, &src)?;
    let _p = probe::span("forward after checks");
    let same = |k: usize| call.lanes[k].0 == call.lanes[k].1;
    // Plans hold no borrow of the buffers: they are made from shared views, then run on the
    // exclusive ones, which are the same buffers.
    let plans = {
        let lanes = (0..D::WIDTH).map(|k| (dst.lane(k), src.lane(k)));
        plan_lanes::<X, S::Shadow>(on, lanes, false)?
    };
    // The lanes the runtime copies (none, and no allocation, when every shadow has the primal's
    // type): two plans each, made with the others before the first write.
    let by_runtime = |k: usize| src.lane(k).is_some() && src.lane_as_primal(k).is_none();
    let mut copies = Vec::new();
    if (0..D::WIDTH).any(by_runtime) {
        copies = (0..D::WIDTH)
            .map(|k| match (dst.lane(k), src.lane(k)) {
                (Some(dd), Some(ds)) if by_runtime(k) && !same(k) => {
                    let zero = ops::plan::<X, X>(on, Op::Zero, dd, None)?;
                    Ok(Some((zero, ops::plan(on, Op::Accumulate, dd, Some(ds))?)))
                }
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
    }
    checked::refuse_capture(on, home(&dst, &src))?;
    if D::PRIMAL_NEEDED {
        crate::rules::in_place_from(names.dst, call.dst, dst.primal_mut(), |d| {
            primal(d, src.primal()).into_result()
        })?;
        checked::copied_whole(on, names, Which::Primal, dst.primal(), src.primal())?;
    }
    for (k, plan) in plans.into_iter().enumerate() {
        let Some(dd) = dst.lane_mut(k) else { continue };
        match (plan, src.lane(k)) {
            (Some(p), _) => p.run::<X, X>(dd, Source::None)?,
            (None, Some(_)) if same(k) => {} // self-copy: identity
            (None, Some(ds)) => match (
                src.lane_as_primal(k),
                copies.get_mut(k).and_then(Option::take),
            ) {
                (Some(ds), _) => {
                    let before = call.lanes[k].0.unwrap_or_else(|| dd.region());
                    crate::rules::in_place_from(names.dst, before, dd, |d| {
                        primal(d, ds).into_result()
                    })?;
                    checked::copied_whole(on, names, Which::Lane(k), &*dd, ds)?;
                }
                (None, Some((zero, add))) => {
                    zero.run::<X, X>(dd, Source::None)?;
                    add.run(dd, Source::Read(ds))?;
                }
                (None, None) => {} // planned above for every such lane
            },
            (None, None) => {}
        }
    }
    Ok(())
}

/// Augmented primal of a slice copy: checks, runs the primal (unless `dst` is `DuplicatedOnly`),
/// and returns the tape for [`copy_reverse`].
pub fn copy_augmented_primal<X, Y, D, S, F, R>(
    on: On<'_>,
    names: RuleNames,
    mut dst: D,
    src: S,
    mut primal: F,
) -> Result<CopyTape>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y, Shadow: ShadowMemory<Elem = X::Elem>>,
    D::Width: SameWidth<S::Width>,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    let (n, call) = check_slices(on, &dst, &src)?;
    let _p = probe::span("augmented primal: primal");
    checked::refuse_capture(on, home(&dst, &src))?;
    if D::PRIMAL_NEEDED {
        crate::rules::in_place_from(names.dst, call.dst, dst.primal_mut(), |d| {
            primal(d, src.primal()).into_result()
        })?;
        checked::copied_whole(on, names, Which::Primal, dst.primal(), src.primal())?;
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
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y, Shadow: ShadowMemory<Elem = X::Elem>>,
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
        plan_lanes::<X, S::Shadow>(on, lanes, true)?
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
