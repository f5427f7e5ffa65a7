//! The bodies of generated collective rules, called by the code that
//! `#[derivative_rule(broadcast | reduce | all_gather | reduce_scatter | all_reduce | send | recv |
//! send_recv)]` generates. Every collective here is linear, so its forward rule is the same
//! collective on the tangents, and its reverse is the adjoint collective on the cotangents
//! ([`Op::adjoint`]): broadcast ↔ reduce(sum) to the root, all-gather ↔ reduce-scatter(sum),
//! send ↔ recv, all-reduce(sum) ↔ itself. NCCL carries the data; the cotangent it brings back is
//! received into scratch and added into the input's shadow on the communicator's stream, then the
//! output's shadow is zeroed (`d_x += Jᵀ d_y; d_y ← 0`).
//!
//! A collective must be entered by every rank, or the ranks that did wait forever. So, unlike a
//! copy, the primal always runs (a `DuplicatedOnly` output does not skip it), and every rank runs
//! one shadow collective per lane, whatever its own activities: a `Const` input contributes zeros,
//! a `Const` output receives into scratch that is then dropped. **Every rank must call the rule with
//! the same batch width** (`Const` on both buffers means width 0: no shadow collective), and not
//! inside an NCCL group (the rules do local work after each collective).
//!
//! Everything is checked before anything is written: NCCL present, ranks in range, lengths of
//! primals and shadows, every buffer on the communicator's device, shadows not partially
//! overlapping.
#![forbid(unsafe_code)]

mod checks;
#[cfg(any(test, feature = "testing"))]
pub mod model;

use crate::activity::{DstArg, SameWidth, SrcArg};
use crate::error::Result;
use crate::nccl::{
    AsComm, CollectiveDst, CollectiveSrc, Comm, NcclElement, Op, RankArg, Scratch, run,
};
use crate::ops::{self, On};
use crate::rules::PrimalOutcome;
use checks::{Side, check, check_tape, dst_side, src_side};
use cudarc::driver::CudaSlice;

/// A collective as a rule names it: the communicator and the operation with its ranks, as given
/// (checked against the communicator when the rule runs).
#[derive(Clone, Copy)]
pub struct Collective<'c> {
    comm: &'c Comm,
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Broadcast(i64),
    Reduce(i64),
    AllGather,
    ReduceScatter,
    AllReduce,
    Send(i64),
    Recv(i64),
    SendRecv(i64, i64),
}

impl<'c> Collective<'c> {
    /// `y ← x` of `root`, on every rank. `x` is read on the root only: elsewhere it may be any
    /// buffer (its length is not checked, its shadow is never touched).
    pub fn broadcast<C: AsComm + ?Sized>(comm: &'c C, root: impl RankArg) -> Self {
        Self::new(comm, Kind::Broadcast(root.rank()))
    }
    /// `y ← Σ x` over the ranks, written on `root` only (elsewhere `y` may be any buffer).
    pub fn reduce<C: AsComm + ?Sized>(comm: &'c C, root: impl RankArg) -> Self {
        Self::new(comm, Kind::Reduce(root.rank()))
    }
    /// `y ← [x of rank 0, .., x of rank p−1]`: `y` has `p` times the length of `x`.
    pub fn all_gather<C: AsComm + ?Sized>(comm: &'c C) -> Self {
        Self::new(comm, Kind::AllGather)
    }
    /// `y ← chunk r of Σ x` on rank `r`: `x` has `p` times the length of `y`.
    pub fn reduce_scatter<C: AsComm + ?Sized>(comm: &'c C) -> Self {
        Self::new(comm, Kind::ReduceScatter)
    }
    /// `y ← Σ x` on every rank.
    pub fn all_reduce<C: AsComm + ?Sized>(comm: &'c C) -> Self {
        Self::new(comm, Kind::AllReduce)
    }
    /// `x` to `peer`.
    pub fn send<C: AsComm + ?Sized>(comm: &'c C, peer: impl RankArg) -> Self {
        Self::new(comm, Kind::Send(peer.rank()))
    }
    /// `y ←` what `peer` sends.
    pub fn recv<C: AsComm + ?Sized>(comm: &'c C, peer: impl RankArg) -> Self {
        Self::new(comm, Kind::Recv(peer.rank()))
    }
    /// `x` to `to` and `y ←` what `from` sends, in one NCCL group.
    pub fn send_recv<C: AsComm + ?Sized>(
        comm: &'c C,
        to: impl RankArg,
        from: impl RankArg,
    ) -> Self {
        Self::new(comm, Kind::SendRecv(to.rank(), from.rank()))
    }

    fn new<C: AsComm + ?Sized>(comm: &'c C, kind: Kind) -> Self {
        Collective {
            comm: comm.as_comm(),
            kind,
        }
    }
}

/// What the augmented primal of a collective hands to its reverse: the collective and the shape
/// it ran with, so that the reverse can check it is given the same arguments.
///
/// Move-only, and consumed by the reverse: one augmented primal, one reverse. Its fields are
/// read-only: a tape is made by the augmented primal alone.
#[derive(Debug, PartialEq, Eq)]
pub struct CollectiveTape {
    pub(crate) op: Op,
    pub(crate) rank: usize,
    pub(crate) world_size: usize,
    pub(crate) src_len: usize,
    pub(crate) dst_len: usize,
    pub(crate) width: usize,
}

impl CollectiveTape {
    /// The operation, with its ranks.
    pub fn op(&self) -> Op {
        self.op
    }
    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// The communicator's number of ranks.
    pub fn world_size(&self) -> usize {
        self.world_size
    }
    /// Elements of `x` on this rank (0 when the rule has no `x` or does not read it here).
    pub fn src_len(&self) -> usize {
        self.src_len
    }
    /// Elements of `y` on this rank (0 when the rule has no `y` or does not write it here).
    pub fn dst_len(&self) -> usize {
        self.dst_len
    }
    /// The number of shadow collectives per call (the batch width).
    pub fn width(&self) -> usize {
        self.width
    }
}

/// Forward lane: the collective on the tangents (zeros for a `Const` input, a dropped result for
/// a `Const` output).
fn forward_lane<T, X, Y>(
    comm: &Comm,
    op: Op,
    (sx, sy): (usize, usize),
    ds: Option<&Y>,
    dd: Option<&mut X>,
) -> Result<()>
where
    T: NcclElement,
    X: CollectiveDst<Elem = T> + ?Sized,
    Y: CollectiveSrc<Elem = T> + ?Sized,
{
    let r = comm.rank();
    let stream = comm.stream();
    let need_zeros = ds.is_none() && op.sends(r);
    let need_sink = dd.is_none() && op.receives(r);
    let mut scratch =
        Scratch::<T>::new(&stream, [need_zeros.then_some(sx), need_sink.then_some(sy)])?;
    let (mut zeros, sink) = scratch.views();
    if let Some(z) = zeros.as_mut() {
        ops::zero(On::Stream(&stream), z)?;
    }
    let send = match ds {
        Some(ds) => Some(ds.view()),
        None => zeros.as_ref().map(|z| z.as_view()),
    };
    let recv = match dd {
        Some(dd) => Some(dd.view_mut()),
        None => sink,
    };
    run(comm, op, send, recv)
}

/// Reverse lane: the adjoint collective on the cotangents, received into scratch, then
/// `d_x += scratch` where `x` was read and `d_y ← 0` where `y` was written.
fn reverse_lane<T, X, Y>(
    comm: &Comm,
    op: Op,
    (sx, sy): (usize, usize),
    ds: Option<&mut Y>,
    dd: Option<&mut X>,
) -> Result<()>
where
    T: NcclElement,
    X: CollectiveDst<Elem = T> + ?Sized,
    Y: CollectiveDst<Elem = T> + ?Sized,
{
    let r = comm.rank();
    let stream = comm.stream();
    let on = On::Stream(&stream);
    let adjoint = op.adjoint();
    // The adjoint sends where the op received, and receives where it sent.
    let need_zeros = dd.is_none() && adjoint.sends(r);
    let need_cotangent = adjoint.receives(r);
    let mut scratch = Scratch::<T>::new(
        &stream,
        [need_cotangent.then_some(sx), need_zeros.then_some(sy)],
    )?;
    let (mut cot, mut zeros) = scratch.views();
    if let Some(z) = zeros.as_mut() {
        ops::zero(on, z)?;
    }
    {
        let send = match dd.as_deref() {
            Some(dd) => Some(dd.view()),
            None => zeros.as_ref().map(|z| z.as_view()),
        };
        run(comm, adjoint, send, cot.as_mut().map(|c| c.slice_mut(..)))?;
    }
    if let (Some(ds), Some(cot)) = (ds, cot.as_ref()) {
        ops::accumulate(on, ds, cot)?;
    }
    if let Some(dd) = dd
        && op.receives(r)
    {
        ops::zero(on, dd)?;
    }
    Ok(())
}

/// Forward rule of a collective with an input `x` (`src`) and an output `y` (`dst`): runs the
/// primal, then per lane the same collective on the tangents.
pub fn collective_forward<X, Y, D, S, F, R>(
    c: Collective<'_>,
    mut dst: D,
    src: S,
    primal: F,
) -> Result<()>
where
    X: CollectiveDst + ?Sized,
    Y: CollectiveSrc<Elem = X::Elem> + ?Sized,
    X::Elem: NcclElement,
    D: DstArg<X>,
    S: SrcArg<Y, Shadow: CollectiveDst<Elem = X::Elem>>,
    D::Width: SameWidth<S::Width>,
    F: FnOnce(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    let w = D::WIDTH.max(S::WIDTH);
    let (op, sx, sy) = check(&c, &src_side(&src, w), &dst_side(&dst, w))?;
    primal(dst.primal_mut(), src.primal()).into_result()?;
    for k in 0..w {
        forward_lane(c.comm, op, (sx, sy), src.lane(k), dst.lane_mut(k))?;
    }
    Ok(())
}

/// Augmented primal of a collective with `x` and `y`: checks, runs the primal, returns the tape.
pub fn collective_augmented_primal<X, Y, D, S, F, R>(
    c: Collective<'_>,
    mut dst: D,
    src: S,
    primal: F,
) -> Result<CollectiveTape>
where
    X: CollectiveDst + ?Sized,
    Y: CollectiveSrc<Elem = X::Elem> + ?Sized,
    X::Elem: NcclElement,
    D: DstArg<X>,
    S: SrcArg<Y, Shadow: CollectiveDst<Elem = X::Elem>>,
    D::Width: SameWidth<S::Width>,
    F: FnOnce(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    let w = D::WIDTH.max(S::WIDTH);
    let (op, sx, sy) = check(&c, &src_side(&src, w), &dst_side(&dst, w))?;
    primal(dst.primal_mut(), src.primal()).into_result()?;
    Ok(tape(&c, op, sx, sy, w))
}

/// Reverse rule of a collective with `x` and `y`: per lane, `d_x += Jᵀ d_y` through the adjoint
/// collective, then `d_y ← 0`, on the communicator's stream.
pub fn collective_reverse<X, Y, D, S>(
    c: Collective<'_>,
    tape: CollectiveTape,
    mut dst: D,
    mut src: S,
) -> Result<()>
where
    X: CollectiveDst + ?Sized,
    Y: CollectiveSrc<Elem = X::Elem> + ?Sized,
    X::Elem: NcclElement,
    D: DstArg<X>,
    S: SrcArg<Y, Shadow: CollectiveDst<Elem = X::Elem>>,
    D::Width: SameWidth<S::Width>,
{
    let w = D::WIDTH.max(S::WIDTH);
    let (op, sx, sy) = check(&c, &src_side(&src, w), &dst_side(&dst, w))?;
    check_tape(&tape, self::tape(&c, op, sx, sy, w))?;
    for k in 0..w {
        reverse_lane(c.comm, op, (sx, sy), src.lane_mut(k), dst.lane_mut(k))?;
    }
    Ok(())
}

/// Forward rule of `send` (an input `x` only): sends `x`, then per lane its tangent.
pub fn send_forward<Y, S, F, R>(c: Collective<'_>, src: S, primal: F) -> Result<()>
where
    Y: CollectiveSrc + ?Sized,
    S: SrcArg<Y, Shadow: CollectiveDst<Elem = Y::Elem>>,
    F: FnOnce(&Y) -> R,
    R: PrimalOutcome,
{
    let w = S::WIDTH;
    let (op, sx, sy) = check(&c, &src_side(&src, w), &Side::absent(w))?;
    primal(src.primal()).into_result()?;
    for k in 0..w {
        forward_lane::<_, CudaSlice<Y::Elem>, S::Shadow>(c.comm, op, (sx, sy), src.lane(k), None)?;
    }
    Ok(())
}

/// Augmented primal of `send`.
pub fn send_augmented_primal<Y, S, F, R>(
    c: Collective<'_>,
    src: S,
    primal: F,
) -> Result<CollectiveTape>
where
    Y: CollectiveSrc + ?Sized,
    S: SrcArg<Y, Shadow: CollectiveDst<Elem = Y::Elem>>,
    F: FnOnce(&Y) -> R,
    R: PrimalOutcome,
{
    let w = S::WIDTH;
    let (op, sx, sy) = check(&c, &src_side(&src, w), &Side::absent(w))?;
    primal(src.primal()).into_result()?;
    Ok(tape(&c, op, sx, sy, w))
}

/// Reverse rule of `send`: per lane, receives the cotangent from the peer and adds it into `d_x`.
pub fn send_reverse<Y, S>(c: Collective<'_>, tape: CollectiveTape, mut src: S) -> Result<()>
where
    Y: CollectiveSrc + ?Sized,
    S: SrcArg<Y, Shadow: CollectiveDst<Elem = Y::Elem>>,
{
    let w = S::WIDTH;
    let (op, sx, sy) = check(&c, &src_side(&src, w), &Side::absent(w))?;
    check_tape(&tape, self::tape(&c, op, sx, sy, w))?;
    for k in 0..w {
        reverse_lane::<_, CudaSlice<Y::Elem>, S::Shadow>(
            c.comm,
            op,
            (sx, sy),
            src.lane_mut(k),
            None,
        )?;
    }
    Ok(())
}

/// Forward rule of `recv` (an output `y` only): receives `y`, then per lane its tangent.
pub fn recv_forward<X, D, F, R>(c: Collective<'_>, mut dst: D, primal: F) -> Result<()>
where
    X: CollectiveDst + ?Sized,
    D: DstArg<X>,
    F: FnOnce(&mut X) -> R,
    R: PrimalOutcome,
{
    let w = D::WIDTH;
    let (op, sx, sy) = check(&c, &Side::absent(w), &dst_side(&dst, w))?;
    primal(dst.primal_mut()).into_result()?;
    for k in 0..w {
        forward_lane::<_, X, CudaSlice<X::Elem>>(c.comm, op, (sx, sy), None, dst.lane_mut(k))?;
    }
    Ok(())
}

/// Augmented primal of `recv`.
pub fn recv_augmented_primal<X, D, F, R>(
    c: Collective<'_>,
    mut dst: D,
    primal: F,
) -> Result<CollectiveTape>
where
    X: CollectiveDst + ?Sized,
    D: DstArg<X>,
    F: FnOnce(&mut X) -> R,
    R: PrimalOutcome,
{
    let w = D::WIDTH;
    let (op, sx, sy) = check(&c, &Side::absent(w), &dst_side(&dst, w))?;
    primal(dst.primal_mut()).into_result()?;
    Ok(tape(&c, op, sx, sy, w))
}

/// Reverse rule of `recv`: per lane, sends the cotangent of `y` back to the peer, then `d_y ← 0`.
pub fn recv_reverse<X, D>(c: Collective<'_>, tape: CollectiveTape, mut dst: D) -> Result<()>
where
    X: CollectiveDst + ?Sized,
    D: DstArg<X>,
{
    let w = D::WIDTH;
    let (op, sx, sy) = check(&c, &Side::absent(w), &dst_side(&dst, w))?;
    check_tape(&tape, self::tape(&c, op, sx, sy, w))?;
    for k in 0..w {
        reverse_lane::<_, X, CudaSlice<X::Elem>>(c.comm, op, (sx, sy), None, dst.lane_mut(k))?;
    }
    Ok(())
}

fn tape(
    c: &Collective<'_>,
    op: Op,
    src_len: usize,
    dst_len: usize,
    width: usize,
) -> CollectiveTape {
    CollectiveTape {
        op,
        rank: c.comm.rank(),
        world_size: c.comm.world_size(),
        src_len,
        dst_len,
        width,
    }
}
