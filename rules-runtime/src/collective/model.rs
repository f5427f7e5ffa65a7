//! A host model of the collectives: what NCCL computes for `p` ranks, on `f64` values, one rank's
//! operation per entry (all equal for a collective; `Send` on one rank and `Recv` on its peer for
//! point-to-point). It is what the collective rules are checked against: the forward rule of
//! `ops` is `apply(ops, ·)` on the tangents, the reverse rule is `apply(adjoint(ops), ·)` on the
//! cotangents, and the dot-product test ⟨J v, w⟩ = ⟨v, Jᵀ w⟩ holds with `Jᵀ = apply(adjoint(ops))`
//! (see the tests here, and `tests/multi_gpu.rs` for the same identities through NCCL).

use super::Op;

/// The lengths `(x, y)` rank `r` of `p` uses for `op` with chunk length `n` (0 for a buffer the
/// rank does not read or write): the chunk is what one rank contributes (`all_gather`,
/// `reduce_scatter`) or the whole buffer (the others). `None` when `p · n` does not fit in
/// `usize` (no buffer has such a length).
pub fn lens(op: Op, r: usize, p: usize, n: usize) -> Option<(usize, usize)> {
    let (x, y) = match op {
        Op::AllGather => (n, p.checked_mul(n)?),
        Op::ReduceScatter => (p.checked_mul(n)?, n),
        _ => (n, n),
    };
    Some((
        if op.sends(r) { x } else { 0 },
        if op.receives(r) { y } else { 0 },
    ))
}

/// The outputs `y[r]` of every rank, given each rank's operation and input `x[r]` (empty where the
/// rank reads nothing). Point-to-point operations must pair up (`Send { peer: b }` on rank `a`
/// with `Recv { peer: a }` or a matching `SendRecv` on rank `b`); `None` if they do not, or if
/// the ranks' collectives differ.
pub fn apply(ops: &[Op], x: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let p = ops.len();
    let first = *ops.first()?;
    let point_to_point =
        |o: Op| matches!(o, Op::Send { .. } | Op::Recv { .. } | Op::SendRecv { .. });
    if !point_to_point(first) && ops.iter().any(|o| *o != first) {
        return None;
    }
    let sum = |xs: &mut dyn Iterator<Item = &Vec<f64>>| -> Vec<f64> {
        let mut acc: Vec<f64> = Vec::new();
        for v in xs {
            if acc.is_empty() {
                acc = vec![0.0; v.len()];
            }
            acc.iter_mut().zip(v).for_each(|(a, b)| *a += b);
        }
        acc
    };
    let y = match first {
        Op::Broadcast { root } => vec![x.get(root)?.clone(); p],
        Op::Reduce { root } => (0..p)
            .map(|r| {
                if r == root {
                    sum(&mut x.iter())
                } else {
                    Vec::new()
                }
            })
            .collect(),
        Op::AllGather => vec![x.concat(); p],
        Op::ReduceScatter => {
            let total = sum(&mut x.iter());
            let n = total.len() / p.max(1);
            (0..p).map(|r| total[r * n..(r + 1) * n].to_vec()).collect()
        }
        Op::AllReduce => vec![sum(&mut x.iter()); p],
        Op::Send { .. } | Op::Recv { .. } | Op::SendRecv { .. } => {
            let to = |o: Op| match o {
                Op::Send { peer } => Some(peer),
                Op::SendRecv { to, .. } => Some(to),
                _ => None,
            };
            let from = |o: Op| match o {
                Op::Recv { peer } => Some(peer),
                Op::SendRecv { from, .. } => Some(from),
                _ => None,
            };
            let mut y = vec![Vec::new(); p];
            for (r, o) in ops.iter().enumerate() {
                if let Some(s) = from(*o) {
                    if to(*ops.get(s)?) != Some(r) {
                        return None;
                    }
                    y[r] = x.get(s)?.clone();
                }
                if let Some(t) = to(*o)
                    && from(*ops.get(t)?) != Some(r)
                {
                    return None;
                }
            }
            y
        }
    };
    Some(y)
}

/// Each rank's adjoint operation.
pub fn adjoint(ops: &[Op]) -> Vec<Op> {
    ops.iter().map(|o| o.adjoint()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small exact values: multiples of 1/8 in [-4, 4], from a seed.
    fn vals(n: usize, seed: u64) -> Vec<f64> {
        let mut z = seed;
        (0..n)
            .map(|_| {
                z = z
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((z >> 33) % 65) as f64 / 8.0 - 4.0
            })
            .collect()
    }

    fn dot(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(u, v)| u.iter().zip(v).map(|(x, y)| x * y).sum::<f64>())
            .sum()
    }

    fn programs(p: usize) -> Vec<Vec<Op>> {
        let mut all = vec![
            vec![Op::AllGather; p],
            vec![Op::ReduceScatter; p],
            vec![Op::AllReduce; p],
        ];
        for root in 0..p {
            all.push(vec![Op::Broadcast { root }; p]);
            all.push(vec![Op::Reduce { root }; p]);
        }
        // A ring shift, and (for two ranks or more) one send paired with one recv.
        all.push(
            (0..p)
                .map(|r| Op::SendRecv {
                    to: (r + 1) % p,
                    from: (r + p - 1) % p,
                })
                .collect(),
        );
        if p >= 2 {
            let mut pair = vec![Op::AllReduce; 2];
            pair[0] = Op::Send { peer: 1 };
            pair[1] = Op::Recv { peer: 0 };
            all.push(pair);
        }
        all
    }

    #[test]
    fn adjoint_is_an_involution_that_swaps_reading_and_writing() {
        for ops in programs(3) {
            assert_eq!(adjoint(&adjoint(&ops)), ops);
            for (r, o) in ops.iter().enumerate() {
                assert_eq!(o.adjoint().sends(r), o.receives(r), "{o:?} on rank {r}");
                assert_eq!(o.adjoint().receives(r), o.sends(r), "{o:?} on rank {r}");
            }
        }
    }

    /// ⟨J v, w⟩ = ⟨v, Jᵀ w⟩ summed over the ranks, exactly, for every collective and 1..=4 ranks:
    /// the adjoint collectives the reverse rules run are the transposes of the forward ones.
    #[test]
    fn dot_product_test_for_every_collective() {
        for p in 1..=4 {
            for ops in programs(p) {
                let p = ops.len();
                for n in [0, 1, 3] {
                    let shape = |r: usize| lens(ops[r], r, p, n).expect("small lengths");
                    let v: Vec<Vec<f64>> = (0..p).map(|r| vals(shape(r).0, 7 + r as u64)).collect();
                    let w: Vec<Vec<f64>> =
                        (0..p).map(|r| vals(shape(r).1, 91 + r as u64)).collect();
                    let jv = apply(&ops, &v).expect("a consistent program");
                    let jtw = apply(&adjoint(&ops), &w).expect("a consistent adjoint");
                    for r in 0..p {
                        assert_eq!(jv[r].len(), w[r].len(), "{ops:?}: y of rank {r}");
                        assert_eq!(jtw[r].len(), v[r].len(), "{ops:?}: x of rank {r}");
                    }
                    assert_eq!(dot(&jv, &w), dot(&v, &jtw), "{ops:?}, n = {n}");
                }
            }
        }
    }

    /// The seed's example through a collective, on the model: f = Σ_r Σ y_r², so d_y = 2y, and the
    /// reverse gives d_x = Jᵀ 2 J x: for an all-gather on p ranks, 2p·x on every rank; for a
    /// broadcast, 2p·x on the root and nothing elsewhere.
    #[test]
    fn seed_round_trip_gradients() {
        for p in 1..=4 {
            let x: Vec<Vec<f64>> = (0..p).map(|r| vals(3, r as u64)).collect();
            let ops = vec![Op::AllGather; p];
            let y = apply(&ops, &x).unwrap();
            let dy: Vec<Vec<f64>> = y
                .iter()
                .map(|v| v.iter().map(|a| 2.0 * a).collect())
                .collect();
            let dx = apply(&adjoint(&ops), &dy).unwrap();
            for r in 0..p {
                let want: Vec<f64> = x[r].iter().map(|a| 2.0 * p as f64 * a).collect();
                assert_eq!(dx[r], want, "all_gather, rank {r} of {p}");
            }
            let ops = vec![Op::Broadcast { root: p - 1 }; p];
            let xs: Vec<Vec<f64>> = (0..p)
                .map(|r| if r == p - 1 { vals(3, 5) } else { Vec::new() })
                .collect();
            let y = apply(&ops, &xs).unwrap();
            let dy: Vec<Vec<f64>> = y
                .iter()
                .map(|v| v.iter().map(|a| 2.0 * a).collect())
                .collect();
            let dx = apply(&adjoint(&ops), &dy).unwrap();
            let want: Vec<f64> = xs[p - 1].iter().map(|a| 2.0 * p as f64 * a).collect();
            assert_eq!(dx[p - 1], want, "broadcast root of {p}");
        }
    }

    #[test]
    fn inconsistent_programs_are_refused() {
        assert!(apply(&[Op::AllGather, Op::AllReduce], &[vec![], vec![]]).is_none());
        assert!(
            apply(
                &[Op::Send { peer: 1 }, Op::Send { peer: 0 }],
                &[vec![1.0], vec![2.0]]
            )
            .is_none()
        );
    }

    /// A chunk length times the number of ranks that overflows `usize` is `None`, not a panic
    /// (unchecked, it would panic in debug builds and wrap to a wrong length in release).
    #[test]
    fn lens_that_overflow_do_not_panic() {
        let r = std::panic::catch_unwind(|| {
            let _ = lens(Op::AllGather, 0, 2, usize::MAX);
            let _ = lens(Op::ReduceScatter, 1, 3, usize::MAX / 2);
        });
        assert!(r.is_ok(), "lens panicked on an overflowing length");
        assert_eq!(lens(Op::AllGather, 0, 2, usize::MAX / 2 + 1), None);
        assert_eq!(lens(Op::ReduceScatter, 1, 3, usize::MAX / 2), None);
        assert_eq!(
            lens(Op::AllGather, 1, 2, usize::MAX / 2),
            Some((usize::MAX / 2, usize::MAX - 1))
        );
        // Ops without a product never overflow.
        assert_eq!(
            lens(Op::AllReduce, 0, 9, usize::MAX),
            Some((usize::MAX, usize::MAX))
        );
    }
}
