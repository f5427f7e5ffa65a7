//! Exact adjoint (dot-product) checks, ⟨J v, w⟩ = ⟨v, Jᵀ w⟩, with `J v` from the generated forward
//! rule and `Jᵀ w` from the generated augmented primal + reverse, for both rule shapes, every
//! element type, widths 1 and 3, lengths 0, 1, odd and large (100 003; 65 under Miri), and views
//! at nonzero offsets inside larger buffers (whose other elements must stay untouched).
//!
//! The copy is modelled with the overwritten destination as an input: inputs (src, old dst),
//! output (new dst), so `J = [I 0]` and `Jᵀ w = (w, 0)`. A forward rule that added into `d_dst`
//! instead of overwriting it, or a reverse that forgot to zero `d_dst`, fails the check.
//!
//! The random values are multiples of 1/64, so both sides are computed exactly: the tolerance is 0.
//!
//! Plus finite-difference checks of composite functions through the forward rule.

use rules_runtime::testing::{adjoint_check, finite_difference_check, random_vec};
use rules_runtime::{Const, Differentiable, Duplicated, DuplicatedOnly, Result};
use rules_runtime::{CopyRule, RawCopyRule};
use rules_tests::{Rng, copy_ptr_rule, copy_slice_rule, lane_ptrs, lanes, ramp};

#[derive(Clone, Copy, Debug)]
enum Shape {
    /// `copy_slice` on sub-slices `&mut y[doff..doff + n]` ← `&x[soff..soff + n]`.
    Slice,
    /// `copy_ptr` on the whole buffers' pointers, with the offsets as arguments.
    Pointer,
}

/// The large length. Under Miri (about 1000x slower; `random_vec` dominates) a small one and no
/// random lengths: no host code path depends on the length, so the same code is checked over
/// fewer elements.
const LARGE: usize = if cfg!(miri) { 65 } else { 100_003 };

/// How many random lengths (below 5000) join the edge cases.
const RANDOM_LENGTHS: usize = if cfg!(miri) { 0 } else { 3 };

/// Lengths: the edge cases, plus a few random ones.
fn lengths(seed: u64) -> Vec<usize> {
    let mut rng = Rng(seed);
    let mut v = vec![0, 1, 2, 3, 7, 33, LARGE];
    v.extend((0..RANDOM_LENGTHS).map(|_| 1 + rng.below(5000)));
    v
}

/// The buffers of one check: primals `x` (src, `slen`), `y` (dst, `dlen`) and per-lane shadows,
/// every element outside the copied ranges a sentinel that no rule may touch.
#[derive(Clone)]
struct Bufs<T, const W: usize> {
    x: Vec<T>,
    y: Vec<T>,
    dx: [Vec<T>; W],
    dy: [Vec<T>; W],
}

struct Case {
    shape: Shape,
    n: usize,
    doff: usize,
    soff: usize,
}

impl Case {
    fn start<T: Differentiable, const W: usize>(&self, seed: u64) -> Bufs<T, W> {
        let (dlen, slen) = (self.doff + self.n + 3, self.soff + self.n + 2);
        Bufs {
            x: random_vec(slen, seed),
            y: ramp(dlen, 100.0),
            dx: core::array::from_fn(|k| ramp(slen, 1000.0 * (k + 1) as f64)),
            dy: core::array::from_fn(|k| ramp(dlen, -1000.0 * (k + 1) as f64)),
        }
    }

    /// Everything outside the copied ranges is as it started.
    fn assert_outside_untouched<T: Differentiable, const W: usize>(
        &self,
        now: &Bufs<T, W>,
        start: &Bufs<T, W>,
    ) {
        let (d, s, n) = (self.doff, self.soff, self.n);
        let outside = |a: &[T], b: &[T], off: usize, what: &str| {
            assert_eq!(
                a[..off],
                b[..off],
                "{what} before the copied range ({self:?})"
            );
            assert_eq!(a[off + n..], b[off + n..], "{what} after the copied range");
        };
        assert_eq!(now.x, start.x, "the source primal is never written");
        outside(&now.y, &start.y, d, "dst");
        for k in 0..W {
            outside(&now.dx[k], &start.dx[k], s, "d_src");
            outside(&now.dy[k], &start.dy[k], d, "d_dst");
        }
    }

    fn forward<T: Differentiable, const W: usize>(&self, b: &mut Bufs<T, W>) -> Result<()> {
        let (d, s, n) = (self.doff, self.soff, self.n);
        match self.shape {
            Shape::Slice => copy_slice_rule().forward(
                Duplicated::batch(
                    &mut b.y[d..d + n],
                    b.dy.each_mut().map(|v| &mut v[d..d + n]),
                ),
                Duplicated::batch(&b.x[s..s + n], b.dx.each_mut().map(|v| &mut v[s..s + n])),
            ),
            Shape::Pointer => unsafe {
                copy_ptr_rule(d, s, n).forward(
                    Duplicated::batch(b.y.as_mut_ptr(), lane_ptrs(&mut b.dy)),
                    Duplicated::batch(b.x.as_ptr(), lane_ptrs(&mut b.dx)),
                )
            },
        }
    }

    /// Augmented primal, then `seed` (called between the two) sets the cotangents, then reverse.
    fn reverse<T: Differentiable, const W: usize>(
        &self,
        b: &mut Bufs<T, W>,
        seed: impl FnOnce(&mut Bufs<T, W>),
    ) -> Result<()> {
        let (d, s, n) = (self.doff, self.soff, self.n);
        match self.shape {
            Shape::Slice => {
                let tape = copy_slice_rule().augmented_primal(
                    Duplicated::batch(
                        &mut b.y[d..d + n],
                        b.dy.each_mut().map(|v| &mut v[d..d + n]),
                    ),
                    Duplicated::batch(&b.x[s..s + n], b.dx.each_mut().map(|v| &mut v[s..s + n])),
                )?;
                seed(b);
                copy_slice_rule().reverse(
                    tape,
                    Duplicated::batch(
                        &mut b.y[d..d + n],
                        b.dy.each_mut().map(|v| &mut v[d..d + n]),
                    ),
                    Duplicated::batch(&b.x[s..s + n], b.dx.each_mut().map(|v| &mut v[s..s + n])),
                )
            }
            Shape::Pointer => unsafe {
                let tape = copy_ptr_rule(d, s, n).augmented_primal(
                    Duplicated::batch(b.y.as_mut_ptr(), lane_ptrs(&mut b.dy)),
                    Duplicated::batch(b.x.as_ptr(), lane_ptrs(&mut b.dx)),
                )?;
                seed(b);
                copy_ptr_rule(d, s, n).reverse(
                    tape,
                    Duplicated::batch(b.y.as_mut_ptr(), lane_ptrs(&mut b.dy)),
                    Duplicated::batch(b.x.as_ptr(), lane_ptrs(&mut b.dx)),
                )
            },
        }
    }

    /// The dot-product test on the stacked lanes: v = [v_src⁰, v_old⁰, v_src¹, v_old¹, ...],
    /// w = [w⁰, w¹, ...].
    fn adjoint<T: Differentiable, const W: usize>(&self, seed: u64) {
        let (d, s, n) = (self.doff, self.soff, self.n);
        let start = self.start::<T, W>(seed);
        let copied_y = {
            let mut y = start.y.clone();
            y[d..d + n].copy_from_slice(&start.x[s..s + n]);
            y
        };
        let jvp = |v: &[T]| -> Result<Vec<T>> {
            let mut b = start.clone();
            for k in 0..W {
                let lane = &v[2 * n * k..2 * n * (k + 1)];
                b.dx[k][s..s + n].copy_from_slice(&lane[..n]);
                b.dy[k][d..d + n].copy_from_slice(&lane[n..]); // tangent of the old dst
            }
            self.forward(&mut b)?;
            assert_eq!(b.y, copied_y, "the primal copy ran, at the right offsets");
            self.assert_outside_untouched(&b, &start);
            Ok(b.dy.iter().flat_map(|l| l[d..d + n].to_vec()).collect())
        };
        let vjp = |w: &[T]| -> Result<Vec<T>> {
            let mut b = start.clone();
            for l in &mut b.dx {
                l[s..s + n].fill(T::zero()); // Jᵀ w starts from zero input shadows
            }
            self.reverse(&mut b, |b| {
                for (k, l) in b.dy.iter_mut().enumerate() {
                    l[d..d + n].copy_from_slice(&w[n * k..n * (k + 1)]);
                }
            })?;
            assert_eq!(b.y, copied_y);
            self.assert_outside_untouched(&b, &start);
            Ok((0..W)
                .flat_map(|k| [&b.dx[k][s..s + n], &b.dy[k][d..d + n]].concat())
                .collect())
        };
        let r = adjoint_check::<T>(2 * W * n, W * n, seed, jvp, vjp).unwrap();
        assert_eq!(r.lhs, r.rhs, "{:?} {self:?} width {W}", T::DTYPE);
        r.assert_within(0.0);
        if n >= 8 {
            assert_ne!(r.lhs, 0.0, "a vacuous check");
        }
    }
}

impl core::fmt::Debug for Case {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Case {
            shape,
            n,
            doff,
            soff,
        } = self;
        write!(f, "{shape:?} n={n} dst offset={doff} src offset={soff}")
    }
}

/// Every length, at offsets (0, 0), (1, 0), (0, 3) and random odd ones.
fn sweep<T: Differentiable, const W: usize>(shape: Shape, seed: u64) {
    let mut rng = Rng(seed);
    for (i, n) in lengths(seed).into_iter().enumerate() {
        let random_odd = (2 * rng.below(20) + 1, 2 * rng.below(20) + 1);
        // The large length at width 1 and two offsets keeps the run short; the small lengths
        // sweep every offset at both widths.
        let offsets = if n == LARGE && W > 1 {
            vec![]
        } else if n == LARGE {
            vec![(0, 0), random_odd]
        } else {
            vec![(0, 0), (1, 0), (0, 3), random_odd]
        };
        for (doff, soff) in offsets {
            let case = Case {
                shape,
                n,
                doff,
                soff,
            };
            case.adjoint::<T, W>(seed + i as u64);
        }
    }
}

macro_rules! adjoint_suite {
    ($m:ident, $t:ty) => {
        mod $m {
            use super::*;
            #[test]
            fn slice_width_1() {
                sweep::<$t, 1>(Shape::Slice, 11);
            }
            #[test]
            fn slice_width_3() {
                sweep::<$t, 3>(Shape::Slice, 13);
            }
            #[test]
            fn pointer_width_1() {
                sweep::<$t, 1>(Shape::Pointer, 17);
            }
            #[test]
            fn pointer_width_3() {
                sweep::<$t, 3>(Shape::Pointer, 19);
            }
        }
    };
}

adjoint_suite!(f32_, f32);
adjoint_suite!(f64_, f64);
adjoint_suite!(f16_, half::f16);
adjoint_suite!(bf16_, half::bf16);
adjoint_suite!(c32_, num_complex::Complex<f32>);
adjoint_suite!(c64_, num_complex::Complex<f64>);

/// The dot-product test with a `DuplicatedOnly` destination (the primal copy is skipped, the
/// derivative is the same) and a `DuplicatedOnly` source (acts as `Duplicated`), width 3.
fn adjoint_duplicated_only<T: Differentiable>(n: usize, seed: u64) {
    const W: usize = 3;
    let x: Vec<T> = random_vec(n, seed);
    let y_old: Vec<T> = ramp(n, 100.0);
    let jvp = |v: &[T]| -> Result<Vec<T>> {
        let mut y = y_old.clone();
        let mut dx: [Vec<T>; W] = core::array::from_fn(|k| v[2 * n * k..][..n].to_vec());
        let mut dy: [Vec<T>; W] = core::array::from_fn(|k| v[2 * n * k + n..][..n].to_vec());
        copy_slice_rule().forward(
            DuplicatedOnly::batch(&mut y[..], lanes(&mut dy)),
            DuplicatedOnly::batch(&x[..], lanes(&mut dx)),
        )?;
        assert_eq!(y, y_old, "DuplicatedOnly: no primal copy");
        Ok(dy.concat())
    };
    let vjp = |w: &[T]| -> Result<Vec<T>> {
        let mut y = y_old.clone();
        let mut dx: [Vec<T>; W] = core::array::from_fn(|_| vec![T::zero(); n]);
        let mut dy: [Vec<T>; W] = core::array::from_fn(|_| vec![T::zero(); n]);
        let tape = copy_slice_rule().augmented_primal(
            DuplicatedOnly::batch(&mut y[..], lanes(&mut dy)),
            DuplicatedOnly::batch(&x[..], lanes(&mut dx)),
        )?;
        dy = core::array::from_fn(|k| w[n * k..][..n].to_vec());
        copy_slice_rule().reverse(
            tape,
            DuplicatedOnly::batch(&mut y[..], lanes(&mut dy)),
            DuplicatedOnly::batch(&x[..], lanes(&mut dx)),
        )?;
        assert_eq!(y, y_old, "DuplicatedOnly: no primal copy");
        Ok((0..W)
            .flat_map(|k| [&dx[k][..], &dy[k][..]].concat())
            .collect())
    };
    let r = adjoint_check::<T>(2 * W * n, W * n, seed, jvp, vjp).unwrap();
    assert_eq!(r.lhs, r.rhs);
    assert_ne!(r.lhs, 0.0);
}

#[test]
fn duplicated_only_adjoint() {
    for n in [1, 9, if cfg!(miri) { 33 } else { 1001 }] {
        adjoint_duplicated_only::<f64>(n, n as u64);
        adjoint_duplicated_only::<half::bf16>(n, n as u64 + 1);
        adjoint_duplicated_only::<num_complex::Complex<f32>>(n, n as u64 + 2);
    }
}

#[test]
fn adjoint_check_catches_a_forward_rule_that_drops_the_derivative() {
    // A wrong J v (a Const source: d_dst ← 0) against the true Jᵀ w must fail the check.
    let n = 64;
    let x: Vec<f64> = random_vec(n, 5);
    let jvp = |_: &[f64]| -> Result<Vec<f64>> {
        let (mut y, mut dy) = (vec![0.0; n], vec![1.0; n]);
        copy_slice_rule().forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))?;
        assert_eq!(dy, vec![0.0; n]);
        Ok(dy)
    };
    let vjp = |w: &[f64]| -> Result<Vec<f64>> {
        let (mut y, mut dy, mut dx) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let t = copy_slice_rule().augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )?;
        dy.copy_from_slice(w);
        copy_slice_rule().reverse(
            t,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )?;
        Ok(dx)
    };
    let r = adjoint_check::<f64>(n, n, 5, jvp, vjp).unwrap();
    assert!(!r.within(1e-6), "{r:?}");
}

/// f(x) = Σ copy(x)ᵢ², through the primal; its tangent Σ 2 yᵢ ẏᵢ with ẏ from the forward rule.
fn sum_of_squares_fd<T>(n: usize, h: f64, tol: f64)
where
    T: Differentiable + core::ops::Mul<Output = T> + core::iter::Sum,
{
    let x: Vec<T> = random_vec(n, 77);
    let f = |x: &[T]| -> Result<Vec<T>> {
        let mut y = vec![T::zero(); x.len()];
        rules_tests::copy_slice(&mut y, x);
        Ok(vec![y.iter().map(|&v| v * v).sum()])
    };
    let jvp = |x: &[T], v: &[T]| -> Result<Vec<T>> {
        let (mut y, mut dy, mut dx) = (vec![T::zero(); n], vec![T::zero(); n], v.to_vec());
        copy_slice_rule().forward(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(x, &mut dx[..]),
        )?;
        let two = T::from_parts([2.0, 0.0]);
        Ok(vec![y.iter().zip(&dy).map(|(&a, &b)| two * a * b).sum()])
    };
    let r = finite_difference_check(&x, 78, h, f, jvp).unwrap();
    r.assert_within(tol);
    assert!(r.rhs > 0.0, "{r:?}");
}

#[test]
fn finite_differences_of_sum_of_squares() {
    for n in [1, 2, 17, if cfg!(miri) { 100 } else { 1000 }] {
        sum_of_squares_fd::<f64>(n, 1e-4, 1e-9);
        sum_of_squares_fd::<f32>(n, 1e-2, 1e-3);
    }
}

#[test]
fn finite_differences_of_a_round_trip_through_views() {
    // g(x) = y ⊙ y where y = copy of x into the middle of a larger buffer and back out (pointer
    // rule, nonzero offsets): J v = 2 x ⊙ v, element-wise.
    let n = 25;
    let x: Vec<f64> = random_vec(n, 3);
    let through = |x: &[f64], v: &[f64]| -> Result<(Vec<f64>, Vec<f64>)> {
        let (mut mid, mut dmid) = (vec![0.0; n + 7], vec![0.0; n + 7]);
        let (mut out, mut dout) = (vec![0.0; n + 2], vec![0.0; n + 2]);
        let mut dx = v.to_vec();
        unsafe {
            copy_ptr_rule(5, 0, n).forward(
                Duplicated::new(mid.as_mut_ptr(), dmid.as_mut_ptr()),
                Duplicated::new(x.as_ptr(), dx.as_mut_ptr()),
            )?;
            copy_ptr_rule(1, 5, n).forward(
                Duplicated::new(out.as_mut_ptr(), dout.as_mut_ptr()),
                Duplicated::new(mid.as_ptr(), dmid.as_mut_ptr()),
            )?;
        }
        Ok((out[1..=n].to_vec(), dout[1..=n].to_vec()))
    };
    let f = |x: &[f64]| -> Result<Vec<f64>> {
        let (y, _) = through(x, &vec![0.0; n])?;
        Ok(y.iter().map(|v| v * v).collect())
    };
    let jvp = |x: &[f64], v: &[f64]| -> Result<Vec<f64>> {
        let (y, dy) = through(x, v)?;
        assert_eq!(dy, v, "J of a round trip is the identity");
        Ok(y.iter().zip(&dy).map(|(a, b)| 2.0 * a * b).collect())
    };
    let r = finite_difference_check(&x, 4, 1e-4, f, jvp).unwrap();
    r.assert_within(1e-9);
    // And the check can fail: a tangent that forgot the chain rule's factor 2.
    let bad = finite_difference_check(&x, 4, 1e-4, f, |x, v| {
        let (y, dy) = through(x, v)?;
        Ok(y.iter().zip(&dy).map(|(a, b)| a * b).collect())
    })
    .unwrap();
    assert!(!bad.within(1e-3), "{bad:?}");
}
