//! Checks any user can run on any generated rule.
//!
//! # Test a rule in one call
//!
//! [`check_copy`], [`check_region`], [`check_memset`] and [`check_fill`] take a rule object and
//! the buffers' lengths ([`Shapes`]), make the buffers themselves ([`TestBuffer`]: host slices
//! and `Vec`s, `CudaSlice`, `PinnedHostSlice`, `UnifiedSlice`, `CudaArray`), and check the rule against its
//! own primitive, which they reach through the rule: `forward(Const(&mut y), Const(&x))` runs the
//! primitive alone. In the spirit of EnzymeTestUtils' `test_forward` / `test_reverse` and
//! ChainRulesTestUtils' `test_frule` / `test_rrule`:
//!
//! ```
//! use rules_runtime::prelude::*;
//! use rules_runtime::testing::{Check, Shapes, check_copy};
//!
//! #[derivative_rule(copy)]
//! fn copy(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
//!     dst.copy_from_slice(src);
//! }
//!
//! let report = check_copy(&mut copy_rule(), Shapes::len(17))?;
//! assert_eq!(report.footprint.len(), 17); // it writes every element of dst
//!
//! /// Not a copy: it scales. Its forward runs the primitive on the tangents (right), its
//! /// reverse accumulates `d_dst` into `d_src` as a copy's does (wrong by a factor 2).
//! #[derivative_rule(copy)]
//! fn scale(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
//!     for (d, s) in dst.iter_mut().zip(src) {
//!         *d = 2.0 * s;
//!     }
//! }
//!
//! let err = check_copy(&mut scale_rule(), Shapes::len(17)).unwrap_err();
//! assert!(err.failed(Check::DotProduct), "{err}");
//! # Ok::<(), rules_runtime::testing::CheckError>(())
//! ```
//!
//! What is checked ([`Check`] names each; a failure says which check, for which call, activities
//! and lane, and the first differing elements):
//! - [`Check::Primal`]: `forward` and `augmented_primal` compute what the primitive computes,
//!   and an augmented primal leaves every shadow as it was.
//! - [`Check::Footprint`]: the elements the primitive writes (run on two destinations whose
//!   values it cannot reproduce) are exactly those the forward rule writes (`d_dst ← 0` with a
//!   `Const` source): a partial memset whose rule zeroes the whole buffer, or a copy that also
//!   writes outside its box.
//! - [`Check::FiniteDifferences`]: the forward rule's tangent equals `(f(x + v) − f(x − v)) / 2`
//!   of the primitive `f(dst_in, src, value) = dst_out`: a fill of `2v` whose rule says `v`.
//! - [`Check::DotProduct`]: ⟨J v, w⟩ from the forward rule equals ⟨v, Jᵀ w⟩ from the reverse
//!   (seeded with `w` in `d_dst` on top of random values in `d_src`, read back as `d_src`'s
//!   increment, `d_dst` after it, and the value's gradient): a copy that scales, permutes or
//!   copies a prefix (its forward runs the primitive on the tangents and is right; its reverse
//!   assumes a plain copy).
//! - [`Check::Activity`]: every combination of `Const`, `Duplicated` and `DuplicatedOnly` on
//!   each side (`Const`, `Dual` and `Active` for a fill's value) against what `Duplicated`
//!   implies, forward and reverse.
//! - [`Check::Batch`]: widths 2 and 3 against width 1, lane by lane.
//!
//! Inputs are multiples of 1/64 in [-1, 1] and the finite-difference step is 1, so for the
//! affine maps a copy, memset or fill computes every element comparison is exact; see
//! [`Shapes::tolerance`] for the defaults and when to change them.
//!
//! The element type and buffer types come from the rule; a rule generic over its buffers (the
//! ready-made ones) is given them: `check_copy::<CudaSlice<f32>, [f32], _>(&mut
//! memcpy_htod_rule(&stream), Shapes::len(17))`. Device buffers are made on the context of the
//! rule's stream (device 0 for a rule that names none); without a GPU a device check is
//! `CheckError::Run` with the runtime's `Error::NoDriver` or `NoDevice`, never a panic.
//!
//! CUDA arrays ([`CudaArray`](crate::memory::array::CudaArray)) are buffers too: give a side's
//! extent with [`Shapes::dst_array`] / [`Shapes::src_array`] (a side without one is a 1-D
//! array of its length), and the check makes the arrays and reads them back whole through the
//! runtime's host copies: `check_region::<CudaArray<f32>, CudaSlice<f32>, _>(&mut
//! to_array_rule(&stream, 2, 1, 1, 24, 5, 5, 4, 3), Shapes::lens(0, 90).dst_array((9, 6, 4)))`.
//!
//! Pointer rules: [`check_raw_copy`], [`check_raw_region`], [`check_raw_memset`] and
//! [`check_raw_fill`] run the same checks through the addresses of buffers of the memory kind
//! each side declares (`Vec`s for `host`; device, pinned or unified memory on the rule's
//! context), `unsafe`: the caller vouches that the rule's offsets and lengths fit the shapes.
//! Views (`CudaView`, `CudaViewMut`) have no [`TestBuffer`]: see its docs.
//!
//! # Lower-level checks
//!
//! - [`adjoint_check`]: the dot-product test ⟨J v, w⟩ = ⟨v, Jᵀ w⟩, with `J v` from a forward rule
//!   and `Jᵀ w` from a reverse rule, on random `v` and `w`. For a copy both sides are sums of the
//!   same products, so they agree to rounding (exactly, for short vectors of exact values).
//! - [`finite_difference_check`]: `J v` from a forward rule against `(f(x + h v) − f(x − h v)) / 2h`.
//!
//! Inner products are real: complex elements count as two real coordinates.

// The subjects' dispatch over activities and widths, shared by the reference and pointer forms
// (`subjects`, `raw`): defined before the modules that expand them.
/// Expands `$go!(dst, other)` for the activity pair, as the activity types' names.
macro_rules! nine {
    ($dst:expr, $o:expr, $go:ident) => {
        match ($dst, $o) {
            (Act::Const, Act::Const) => $go!(Const, Const),
            (Act::Const, Act::Dup) => $go!(Const, Duplicated),
            (Act::Const, Act::Only) => $go!(Const, DuplicatedOnly),
            (Act::Dup, Act::Const) => $go!(Duplicated, Const),
            (Act::Dup, Act::Dup) => $go!(Duplicated, Duplicated),
            (Act::Dup, Act::Only) => $go!(Duplicated, DuplicatedOnly),
            (Act::Only, Act::Const) => $go!(DuplicatedOnly, Const),
            (Act::Only, Act::Dup) => $go!(DuplicatedOnly, Duplicated),
            (Act::Only, Act::Only) => $go!(DuplicatedOnly, DuplicatedOnly),
        }
    };
}

/// Calls `$f::<N>(..)` for the width.
macro_rules! by_width {
    ($width:expr, $f:ident [$($g:tt),*] ( $($arg:expr),* )) => {
        match $width {
            1 => $f::<$($g,)* 1>($($arg),*),
            2 => $f::<$($g,)* 2>($($arg),*),
            3 => $f::<$($g,)* 3>($($arg),*),
            w => Err(bad_width(w)),
        }
    };
}

mod buffers;
mod checks;
mod pointers;
mod raw;
mod report;
mod subjects;

pub use buffers::{Env, TestBuffer};
pub use raw::{check_raw_copy, check_raw_fill, check_raw_memset, check_raw_region};
pub use report::{Check, CheckError, Diff, Failure, Report, Shapes};

use crate::rules::{CopyRule, FillRule, MemsetRule, RegionRule};
use core::marker::PhantomData;
use subjects::{CopySubject, FillSubject, MemsetSubject, RegionSubject};

/// Checks a `copy` rule (`dst: &mut X ← src: &Y`) against its primitive: every check of the
/// [module docs](self), on buffers of `shapes.dst` and `shapes.src` elements.
pub fn check_copy<'s, X, Y, R>(rule: &mut R, shapes: Shapes) -> Result<Report, CheckError>
where
    R: CopyRule<'s, X, Y>,
    X: TestBuffer + ?Sized,
    Y: TestBuffer<Elem = X::Elem> + ?Sized,
{
    let env = Env::of(rule.__on());
    let mut s = CopySubject {
        rule,
        env,
        ext: [shapes.dst_ext(), shapes.src_ext()],
        _p: PhantomData,
    };
    checks::check_all(&mut s, shapes)
}

/// Checks a two-buffer region rule (`copy2d`, `copy3d`, a `copy` with `restore`) against its
/// primitive, as [`check_copy`]; the boxes are the rule object's (its width, height and
/// pitches), the buffers' lengths `shapes`.
pub fn check_region<'s, X, Y, R>(rule: &mut R, shapes: Shapes) -> Result<Report, CheckError>
where
    R: RegionRule<'s, X, Y>,
    X: TestBuffer + ?Sized,
    Y: TestBuffer<Elem = X::Elem> + ?Sized,
{
    let env = Env::of(rule.__plan().0);
    let mut s = RegionSubject {
        rule,
        env,
        ext: [shapes.dst_ext(), shapes.src_ext()],
        _p: PhantomData,
    };
    checks::check_all(&mut s, shapes)
}

/// Checks a `memset` rule against its primitive (`shapes.dst` elements; `shapes.src` unused).
pub fn check_memset<'s, X, R>(rule: &mut R, shapes: Shapes) -> Result<Report, CheckError>
where
    R: MemsetRule<'s, X>,
    X: TestBuffer + ?Sized,
{
    let env = Env::of(rule.__plan().0);
    let mut s = MemsetSubject {
        rule,
        env,
        ext: shapes.dst_ext(),
        _p: PhantomData,
    };
    checks::check_all(&mut s, shapes)
}

/// Checks a `fill` rule by value against its primitive (`shapes.dst` elements); the value is
/// `Const`, `Dual` (forward) and `Active` (reverse) in turn.
pub fn check_fill<'s, X, R>(rule: &mut R, shapes: Shapes) -> Result<Report, CheckError>
where
    R: FillRule<'s, X>,
    X: TestBuffer + ?Sized,
{
    let env = Env::of(rule.__plan().0);
    let mut s = FillSubject {
        rule,
        env,
        ext: shapes.dst_ext(),
        _p: PhantomData,
    };
    checks::check_all(&mut s, shapes)
}

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
    let wrong = |what: &str, expected: usize, found: usize| crate::error::Error::LengthMismatch {
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
    pub const PTX: &str = crate::driver::pool::modules::PTX;

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
        crate::driver::require_driver()?;
        // SAFETY: by the caller's contract.
        unsafe { crate::device::kernels::launch_accumulate(stream, dtype, acc, src, n, zero_src) }
    }

    /// Sets `bytes` bytes at device address `ptr` to zero on `stream` (the driver's memset).
    ///
    /// # Safety
    /// `ptr .. ptr + bytes` valid device-accessible memory, ordered on `stream`.
    pub unsafe fn zero(stream: &CudaStream, ptr: u64, bytes: usize) -> Result<()> {
        crate::driver::require_driver()?;
        // SAFETY: by the caller's contract.
        unsafe { crate::device::kernels::memset_zero(stream, ptr, bytes) }
    }
}

/// What the runtime's cache holds, for tests that check it is released: the number of contexts
/// it holds, and for `ctx` the number and total bytes of its pooled staging buffers.
pub fn cache_held(ctx: &cudarc::driver::CudaContext) -> (usize, usize, usize) {
    let (buffers, bytes) = crate::driver::pool::pooled(ctx);
    (crate::driver::pool::contexts_held(), buffers, bytes)
}

/// The host-side profile of the calls made on this thread since the last call (feature `probe`;
/// empty without it): for each step, its name, total nanoseconds and count, inclusive of the steps
/// inside it. For `bench-overhead`.
pub fn probe_take() -> Vec<(&'static str, u64, u64)> {
    crate::driver::probe::take()
}
