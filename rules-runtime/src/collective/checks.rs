//! The checks of the collective rules, run before any byte moves: NCCL present, ranks in range,
//! lengths of primals and shadows as each collective needs them, every buffer on the
//! communicator's device, shadows not partially overlapping, the tape matching.

use super::{Collective, CollectiveTape, Kind};
use crate::activity::{DstArg, SrcArg};
use crate::error::{Error, Result, check_len};
use crate::memory::{Overlap, ShadowRead};
use crate::nccl::{CollectiveDst, CollectiveSrc, Op, require_nccl};

impl Kind {
    /// The operation, its ranks checked against a communicator of `p` ranks.
    fn op(self, p: usize) -> Result<Op> {
        let check = |what: &'static str, rank: i64| -> Result<usize> {
            usize::try_from(rank)
                .ok()
                .filter(|&r| r < p)
                .ok_or(Error::InvalidRank {
                    what,
                    rank,
                    world_size: p,
                })
        };
        Ok(match self {
            Kind::Broadcast(r) => Op::Broadcast {
                root: check("the root of `broadcast`", r)?,
            },
            Kind::Reduce(r) => Op::Reduce {
                root: check("the root of `reduce`", r)?,
            },
            Kind::AllGather => Op::AllGather,
            Kind::ReduceScatter => Op::ReduceScatter,
            Kind::AllReduce => Op::AllReduce,
            Kind::Send(r) => Op::Send {
                peer: check("the peer of `send`", r)?,
            },
            Kind::Recv(r) => Op::Recv {
                peer: check("the peer of `recv`", r)?,
            },
            Kind::SendRecv(t, f) => Op::SendRecv {
                to: check("the `send_to` rank of `send_recv`", t)?,
                from: check("the `recv_from` rank of `send_recv`", f)?,
            },
        })
    }
}

/// A rule's view of one side (`x` or `y`): the primal's length, and per lane whether it has a
/// shadow and that shadow's facts.
pub(super) struct Side {
    /// Whether the rule has this buffer at all.
    present: bool,
    len: usize,
    /// Per lane: the shadow's length and region, if it has one.
    lanes: Vec<Option<(usize, crate::memory::Region)>>,
    /// Context handles (primal and shadows) with a name, for the device check.
    contexts: Vec<(String, usize, usize)>,
}

impl Side {
    pub(super) fn absent(width: usize) -> Self {
        Side {
            present: false,
            len: 0,
            lanes: vec![None; width],
            contexts: Vec::new(),
        }
    }

    fn of<M: ShadowRead + ?Sized>(
        name: &str,
        primal: &M,
        lane: impl Fn(usize) -> Option<(usize, crate::memory::Region)>,
        shadow_ctx: impl Fn(usize) -> Option<(usize, usize)>,
        width: usize,
    ) -> Self {
        let mut contexts = Vec::new();
        if let Some(c) = primal.context() {
            contexts.push((
                format!("the primal `{name}`"),
                c.cu_ctx() as usize,
                c.ordinal(),
            ));
        }
        for k in 0..width {
            if let Some((h, o)) = shadow_ctx(k) {
                contexts.push((format!("the shadow of `{name}` (lane {k})"), h, o));
            }
        }
        Side {
            present: true,
            len: primal.len(),
            lanes: (0..width).map(lane).collect(),
            contexts,
        }
    }
}

/// The lengths this rank's `x` and `y` must have: `(src, dst)`, `None` where not checked.
///
/// A length times the number of ranks that overflows `usize` is refused here, before anything
/// moves, as [`Error::LengthMismatch`] with `expected: usize::MAX`: it is one, since no buffer can
/// hold more elements than `usize` counts (a saturated length would instead let a buffer of
/// `usize::MAX` elements pass, and a wrapped one a short buffer).
fn expected(
    op: Op,
    r: usize,
    p: usize,
    x: &Side,
    y: &Side,
) -> Result<(Option<usize>, Option<usize>)> {
    let reads = x.present && op.sends(r);
    let writes = y.present && op.receives(r);
    // `p` chunks of `chunk.len` elements, which `whole` (named `name`) must hold.
    let times_p = |chunk: &Side, whole: &Side, name: &str| -> Result<usize> {
        let n = chunk.len;
        n.checked_mul(p).ok_or_else(|| Error::LengthMismatch {
            what: format!(
                "the primal `{name}` of `{}` on rank {r} of {p}, which would need {p} × {n} \
                 elements (more than `usize` counts),",
                op.name()
            ),
            expected: usize::MAX,
            found: whole.len,
        })
    };
    let (sx, sy) = match op {
        Op::Broadcast { .. } => (Some(y.len), Some(y.len)),
        Op::Reduce { .. } => (Some(x.len), Some(x.len)),
        Op::AllGather if writes => (Some(x.len), Some(times_p(x, y, "y")?)),
        Op::ReduceScatter if reads => (Some(times_p(y, x, "x")?), Some(y.len)),
        Op::AllGather | Op::ReduceScatter => (Some(x.len), Some(y.len)),
        Op::AllReduce => (Some(x.len), Some(x.len)),
        Op::Send { .. } | Op::Recv { .. } | Op::SendRecv { .. } => (Some(x.len), Some(y.len)),
    };
    Ok((sx.filter(|_| reads), sy.filter(|_| writes)))
}

/// Checks everything a collective rule needs before any byte moves; returns the operation and the
/// lengths `(src_len, dst_len)` this rank uses (0 where a side is not used here).
pub(super) fn check(c: &Collective<'_>, x: &Side, y: &Side) -> Result<(Op, usize, usize)> {
    require_nccl()?;
    let checked = check_shape(c.kind, c.comm.rank(), c.comm.world_size(), x, y)?;
    // The primal and NCCL run with the communicator's context current on this thread.
    c.comm
        .context()
        .bind_to_thread()
        .map_err(crate::driver::driver("cuCtxSetCurrent"))?;
    let home = c.comm.context();
    for (what, handle, ordinal) in x.contexts.iter().chain(&y.contexts) {
        if *handle != home.cu_ctx() as usize {
            return Err(Error::ContextMismatch {
                what: format!("{what} of `{}`", checked.0.name()),
                expected: home.ordinal(),
                found: *ordinal,
            });
        }
    }
    Ok(checked)
}

/// The checks that need only rank `r` of `p`: ranks in range, lengths of primals and shadows,
/// shadows not partially overlapping.
fn check_shape(kind: Kind, r: usize, p: usize, x: &Side, y: &Side) -> Result<(Op, usize, usize)> {
    let op = kind.op(p)?;
    let (ex, ey) = expected(op, r, p, x, y)?;
    let what = |name: &str| format!("the primal `{name}` of `{}` on rank {r} of {p}", op.name());
    for (name, side, e) in [("x", x, ex), ("y", y, ey)] {
        let Some(e) = e else { continue };
        check_len(what(name), e, side.len)?;
        for (k, lane) in side.lanes.iter().enumerate() {
            if let Some((n, _)) = lane {
                check_len(format!("the shadow of `{name}` (lane {k})"), e, *n)?;
            }
        }
    }
    for (k, (a, b)) in x.lanes.iter().zip(&y.lanes).enumerate() {
        if let (Some((_, a)), Some((_, b))) = (a, b)
            && b.relation(*a) == Overlap::Partial
        {
            return Err(Error::partial_overlap(
                format!("the shadows of lane {k} of `{}`", op.name()),
                *b,
                *a,
            ));
        }
    }
    Ok((op, ex.unwrap_or(0), ey.unwrap_or(0)))
}

pub(super) fn src_side<Y, S>(src: &S, width: usize) -> Side
where
    Y: CollectiveSrc + ?Sized,
    S: SrcArg<Y, Shadow: CollectiveDst<Elem = Y::Elem>>,
{
    Side::of(
        "x",
        src.primal(),
        |k| src.lane(k).map(|s| (s.len(), s.region())),
        |k| {
            src.lane(k)
                .and_then(|s| s.context().map(|c| (c.cu_ctx() as usize, c.ordinal())))
        },
        width,
    )
}

pub(super) fn dst_side<X, D>(dst: &D, width: usize) -> Side
where
    X: CollectiveDst + ?Sized,
    D: DstArg<X>,
{
    Side::of(
        "y",
        dst.primal(),
        |k| dst.lane(k).map(|s| (s.len(), s.region())),
        |k| {
            dst.lane(k)
                .and_then(|s| s.context().map(|c| (c.cu_ctx() as usize, c.ordinal())))
        },
        width,
    )
}

pub(super) fn check_tape(made: &CollectiveTape, found: CollectiveTape) -> Result<()> {
    if *made == found {
        Ok(())
    } else {
        Err(Error::TapeMismatch(format!(
            "the tape was made for {made:?}, but the reverse was called with {found:?}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::{Const, Duplicated};

    fn side_x<const N: usize>(x: &Duplicated<&[f32], &mut [f32], N>) -> Side {
        Side::of(
            "x",
            x.primal,
            |k| Some((x.shadows[k].len(), x.shadows[k].region())),
            |_| None,
            N,
        )
    }

    fn side_y(y: &[f32], width: usize) -> Side {
        let c = Const(y);
        Side::of("y", c.0, |_| None, |_| None, width)
    }

    #[test]
    fn ranks_are_checked_against_the_communicator() {
        let (x, mut dx) = ([0.0f32; 2], [0.0f32; 2]);
        let xs = side_x(&Duplicated::new(&x[..], &mut dx[..]));
        let y = side_y(&[0.0; 2], 1);
        for kind in [Kind::Broadcast(2), Kind::Reduce(-1), Kind::Send(5)] {
            let e = check_shape(kind, 0, 2, &xs, &y).unwrap_err();
            assert!(matches!(e, Error::InvalidRank { world_size: 2, .. }), "{e}");
        }
        let e = check_shape(Kind::SendRecv(1, 2), 0, 2, &xs, &y).unwrap_err();
        assert!(e.to_string().contains("recv_from"), "{e}");
        assert!(check_shape(Kind::Broadcast(1), 0, 2, &xs, &y).is_ok());
    }

    #[test]
    fn lengths_follow_each_collective() {
        let (x, mut dx) = ([0.0f32; 3], [0.0f32; 3]);
        let xs = side_x(&Duplicated::new(&x[..], &mut dx[..]));
        // all_gather on 2 ranks: y holds 6; reduce_scatter: x holds 2·|y|.
        let (op, sx, sy) = check_shape(Kind::AllGather, 1, 2, &xs, &side_y(&[0.0; 6], 1)).unwrap();
        assert_eq!((op, sx, sy), (Op::AllGather, 3, 6));
        let e = check_shape(Kind::AllGather, 1, 2, &xs, &side_y(&[0.0; 3], 1)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::LengthMismatch {
                    expected: 6,
                    found: 3,
                    ..
                }
            ),
            "{e}"
        );
        let e = check_shape(Kind::ReduceScatter, 0, 2, &xs, &side_y(&[0.0; 3], 1)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::LengthMismatch {
                    expected: 6,
                    found: 3,
                    ..
                }
            ),
            "{e}"
        );
        // A broadcast reads `x` on the root only: elsewhere any length will do.
        let (_, sx, sy) =
            check_shape(Kind::Broadcast(0), 1, 2, &xs, &side_y(&[0.0; 5], 1)).unwrap();
        assert_eq!((sx, sy), (0, 5));
        assert!(check_shape(Kind::Broadcast(1), 1, 2, &xs, &side_y(&[0.0; 5], 1)).is_err());
        // A reduce writes `y` on the root only.
        let (_, sx, sy) = check_shape(Kind::Reduce(0), 1, 2, &xs, &side_y(&[], 1)).unwrap();
        assert_eq!((sx, sy), (3, 0));
        // Shadows are checked like primals.
        let mut short = [0.0f32; 2];
        let e = check_shape(
            Kind::AllReduce,
            0,
            1,
            &side_x(&Duplicated::new(&x[..], &mut short[..])),
            &side_y(&[0.0; 3], 1),
        )
        .unwrap_err();
        assert!(e.to_string().contains("shadow of `x` (lane 0)"), "{e}");
    }

    #[test]
    fn tapes_must_match() {
        let t = || CollectiveTape {
            op: Op::AllGather,
            rank: 0,
            world_size: 2,
            src_len: 3,
            dst_len: 6,
            width: 1,
        };
        assert!(check_tape(&t(), t()).is_ok());
        let e = check_tape(&t(), CollectiveTape { width: 3, ..t() }).unwrap_err();
        assert!(matches!(e, Error::TapeMismatch(_)), "{e}");
    }

    fn huge(len: usize) -> Side {
        Side {
            present: true,
            len,
            lanes: vec![None],
            contexts: Vec::new(),
        }
    }

    /// `|x| · p` (all_gather) or `|y| · p` (reduce_scatter) that overflows `usize` is a typed
    /// error, never a length that saturates into a match (`usize::MAX` for the other side).
    #[test]
    fn lengths_times_ranks_that_overflow_are_refused() {
        let big = usize::MAX / 2 + 1;
        for (kind, x, y) in [
            (Kind::AllGather, huge(big), huge(usize::MAX)),
            (Kind::ReduceScatter, huge(usize::MAX), huge(big)),
        ] {
            let r = check_shape(kind, 0, 2, &x, &y);
            assert!(
                matches!(r, Err(Error::LengthMismatch { .. })),
                "{kind:?}: {:?}",
                r.map_err(|e| e.to_string())
            );
        }
        let e = check_shape(Kind::AllGather, 1, 3, &huge(big), &huge(6)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::LengthMismatch {
                    expected: usize::MAX,
                    found: 6,
                    ..
                }
            ),
            "{e}"
        );
        let msg = e.to_string();
        assert!(msg.contains("`y` of `all_gather` on rank 1 of 3"), "{msg}");
        assert!(msg.contains("more than `usize` counts"), "{msg}");
    }
}
