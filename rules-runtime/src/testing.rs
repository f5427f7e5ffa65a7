//! Checks any user can run on any generated rule.
//!
//! - [`adjoint_check`]: the dot-product test ⟨J v, w⟩ = ⟨v, Jᵀ w⟩, with `J v` from a forward rule
//!   and `Jᵀ w` from a reverse rule, on random `v` and `w`. For a copy both sides are sums of the
//!   same products, so they agree to rounding (exactly, for short vectors of exact values).
//! - [`finite_difference_check`]: `J v` from a forward rule against `(f(x + h v) − f(x − h v)) / 2h`.
//!
//! Inner products are real: complex elements count as two real coordinates.

use crate::element::Differentiable;
use crate::error::Result;
use rand::{Rng, SeedableRng};

/// The generator of [`random_vec`]. Under Miri a cheap one: ChaCha (`StdRng`) costs there about
/// 35 times as much per element as the rest of a check, and a quarter of a second per call.
#[cfg(not(miri))]
type TestRng = rand::rngs::StdRng;
#[cfg(miri)]
type TestRng = rand::rngs::SmallRng;

/// Random elements in [-1, 1], rounded to what `T` can hold, reproducible from `seed`.
pub fn random_vec<T: Differentiable>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = TestRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            // Multiples of 1/64 are exact in every supported type, so sums of a few stay exact.
            let mut part = || f64::from(rng.random_range(-64i32..=64)) / 64.0;
            T::from_parts([part(), part()])
        })
        .collect()
}

/// The real inner product Σ re(aᵢ)·re(bᵢ) + im(aᵢ)·im(bᵢ), in f64.
pub fn dot<T: Differentiable>(a: &[T], b: &[T]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let (x, y) = (x.to_parts(), y.to_parts());
            x[0] * y[0] + x[1] * y[1]
        })
        .sum()
}

/// The outcome of a dot-product or finite-difference check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckReport {
    /// ⟨J v, w⟩, or the finite-difference estimate's norm.
    pub lhs: f64,
    /// ⟨v, Jᵀ w⟩, or the forward rule's norm.
    pub rhs: f64,
    /// |lhs − rhs| / max(1, |lhs|, |rhs|) (adjoint), or the relative error norm (finite differences).
    pub rel_err: f64,
}

impl CheckReport {
    /// Whether the relative error is within `tol`.
    pub fn within(&self, tol: f64) -> bool {
        self.rel_err <= tol
    }

    /// Panics with both sides printed unless the relative error is within `tol`.
    #[track_caller]
    pub fn assert_within(&self, tol: f64) {
        assert!(
            self.within(tol),
            "check failed: {self:?} exceeds tolerance {tol}"
        );
    }
}

/// The dot-product (adjoint) test for a linear map with `n_in` inputs and `n_out` outputs.
///
/// `jvp(v)` must return `J v` (built from the forward rule) and `vjp(w)` must return `Jᵀ w` (built
/// from the augmented primal + reverse rules, starting from zero input shadows).
pub fn adjoint_check<T: Differentiable>(
    n_in: usize,
    n_out: usize,
    seed: u64,
    mut jvp: impl FnMut(&[T]) -> Result<Vec<T>>,
    mut vjp: impl FnMut(&[T]) -> Result<Vec<T>>,
) -> Result<CheckReport> {
    let v = random_vec::<T>(n_in, seed);
    let w = random_vec::<T>(n_out, seed ^ 0x9e37_79b9_7f4a_7c15);
    let jv = jvp(&v)?;
    let jtw = vjp(&w)?;
    let wrong = |what: &str, expected: usize, found: usize| crate::Error::LengthMismatch {
        what: what.to_string(),
        expected,
        found,
    };
    if jv.len() != n_out {
        return Err(wrong("the result of `jvp`", n_out, jv.len()));
    }
    if jtw.len() != n_in {
        return Err(wrong("the result of `vjp`", n_in, jtw.len()));
    }
    let (lhs, rhs) = (dot(&jv, &w), dot(&v, &jtw));
    let rel_err = (lhs - rhs).abs() / lhs.abs().max(rhs.abs()).max(1.0);
    Ok(CheckReport { lhs, rhs, rel_err })
}

/// Central finite differences against a forward rule, at `x` in direction `v` (random from `seed`).
///
/// `f(x)` runs the primal; `jvp(x, v)` returns the forward rule's tangent output.
pub fn finite_difference_check<T: Differentiable>(
    x: &[T],
    seed: u64,
    h: f64,
    mut f: impl FnMut(&[T]) -> Result<Vec<T>>,
    mut jvp: impl FnMut(&[T], &[T]) -> Result<Vec<T>>,
) -> Result<CheckReport> {
    let v = random_vec::<T>(x.len(), seed);
    let shifted = |sign: f64| -> Vec<T> {
        x.iter()
            .zip(&v)
            .map(|(a, b)| {
                let (a, b) = (a.to_parts(), b.to_parts());
                T::from_parts([a[0] + sign * h * b[0], a[1] + sign * h * b[1]])
            })
            .collect()
    };
    let (plus, minus) = (f(&shifted(1.0))?, f(&shifted(-1.0))?);
    let tangent = jvp(x, &v)?;
    let (mut err, mut norm_fd, mut norm_t) = (0.0f64, 0.0f64, 0.0f64);
    for ((p, m), t) in plus.iter().zip(&minus).zip(&tangent) {
        let (p, m, t) = (p.to_parts(), m.to_parts(), t.to_parts());
        for i in 0..T::PARTS {
            let fd = (p[i] - m[i]) / (2.0 * h);
            err += (fd - t[i]).powi(2);
            norm_fd += fd * fd;
            norm_t += t[i] * t[i];
        }
    }
    let rel_err = if plus.len() != tangent.len() {
        f64::INFINITY
    } else {
        err.sqrt() / norm_fd.sqrt().max(norm_t.sqrt()).max(1e-300)
    };
    Ok(CheckReport {
        lhs: norm_fd.sqrt(),
        rhs: norm_t.sqrt(),
        rel_err,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjoint_check_catches_a_wrong_transpose() {
        // J = [[1, 2], [0, 1]]; a wrong Jᵀ (J itself) must fail.
        let jvp = |v: &[f64]| Ok(vec![v[0] + 2.0 * v[1], v[1]]);
        let good =
            adjoint_check(2, 2, 7, jvp, |w: &[f64]| Ok(vec![w[0], 2.0 * w[0] + w[1]])).unwrap();
        good.assert_within(1e-14);
        let bad =
            adjoint_check(2, 2, 7, jvp, |w: &[f64]| Ok(vec![w[0] + 2.0 * w[1], w[1]])).unwrap();
        assert!(!bad.within(1e-6), "{bad:?}");
    }

    #[test]
    fn finite_differences_catch_a_wrong_tangent() {
        let f = |x: &[f64]| Ok(x.iter().map(|a| a * a).collect());
        let x = [0.5, -1.0, 2.0];
        let good = finite_difference_check(&x, 3, 1e-4, f, |x, v| {
            Ok(x.iter().zip(v).map(|(a, b)| 2.0 * a * b).collect())
        });
        good.unwrap().assert_within(1e-8);
        let bad = finite_difference_check(&x, 3, 1e-4, f, |_, v| Ok(v.to_vec())).unwrap();
        assert!(!bad.within(1e-3), "{bad:?}");
    }
}

/// The host model of the collectives that the collective rules are checked against.
pub use crate::collective::model as collective_model;

/// Raw launches of the runtime's kernels, for benchmarks that time them without the operations'
/// checks and routing. Not an API for rules: use [`crate::ops`].
pub mod kernels {
    use crate::element::Dtype;
    use crate::error::Result;
    use cudarc::driver::CudaStream;

    /// The runtime's kernels as PTX text, for benchmarks that launch them through cudarc's own
    /// launch builder (`CudaContext::load_module`), as a user launching a kernel of their own would.
    pub const PTX: &str = crate::device::kernels::PTX;

    /// Launches a kernel that does nothing (one block of one thread): the launch-overhead ceiling.
    pub fn empty_launch(stream: &CudaStream) -> Result<()> {
        crate::device::kernels::empty_launch(stream)
    }

    /// Launches `acc[i] += src[i]` (and `src[i] = 0` when `zero_src`) on `n` elements of `dtype`.
    ///
    /// # Safety
    /// Both addresses valid on `stream`'s device for `n` elements, ordered on `stream`, disjoint
    /// or equal.
    pub unsafe fn accumulate(
        stream: &CudaStream,
        dtype: Dtype,
        acc: u64,
        src: u64,
        n: usize,
        zero_src: bool,
    ) -> Result<()> {
        crate::cuda::require_driver()?;
        // SAFETY: by the caller's contract.
        unsafe { crate::device::kernels::launch_accumulate(stream, dtype, acc, src, n, zero_src) }
    }

    /// Sets `bytes` bytes at device address `ptr` to zero on `stream` (the driver's memset).
    ///
    /// # Safety
    /// `ptr .. ptr + bytes` valid device-accessible memory, ordered on `stream`.
    pub unsafe fn zero(stream: &CudaStream, ptr: u64, bytes: usize) -> Result<()> {
        crate::cuda::require_driver()?;
        // SAFETY: by the caller's contract.
        unsafe { crate::device::kernels::memset_zero(stream, ptr, bytes) }
    }
}

/// What the runtime's cache holds, for tests that check it is released: the number of contexts
/// it holds, and for `ctx` the number and total bytes of its pooled staging buffers.
pub fn cache_held(ctx: &cudarc::driver::CudaContext) -> (usize, usize, usize) {
    let (buffers, bytes) = crate::device::pool::pooled(ctx);
    (crate::device::pool::contexts_held(), buffers, bytes)
}

/// The host-side profile of the calls made on this thread since the last call (feature `probe`;
/// empty without it): for each step, its name, total nanoseconds and count, inclusive of the steps
/// inside it. For `bench-overhead`.
pub fn probe_take() -> Vec<(&'static str, u64, u64)> {
    crate::device::probe::take()
}
