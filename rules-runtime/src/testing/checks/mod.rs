//! The checks of a rule, written once against [`Subject`]: a rule seen as a function of host
//! vectors, whatever memory its buffers live in and whatever its kind.
//!
//! The primitive computes `f(dst_in, src, value) = dst_out`; it is affine (a copy, memset or
//! fill), so with inputs on the grid of multiples of 1/64 and the step h = 1 the central
//! differences `(f(x + v) − f(x − v)) / 2` are its derivative `J v` exactly.
//!
//! [`check_all`] drives them in a fixed order, each in a file of its own: the write footprint
//! ([`footprint`]), the forward against finite differences ([`forward`]), the dot product of
//! the reverse with the forward ([`reverse`]), then every activity and width against the
//! references the two before it made ([`activity`]). [`run`] holds what they share: the calls,
//! the comparisons, and the failures found so far.

#![forbid(unsafe_code)]

mod activity;
mod footprint;
mod forward;
mod reverse;
mod run;

use super::random_vec;
use super::report::{Check, CheckError, Report, Shapes};
use crate::element::Differentiable;
use crate::error::Result;
use run::Run;

/// An argument's activity, for a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    /// `Const`.
    Const,
    /// `Duplicated` (for a fill's value: `Dual` in forward mode, `Active` in reverse).
    Dup,
    /// `DuplicatedOnly`.
    Only,
}

impl Act {
    fn word(self, value: bool, reverse: bool) -> &'static str {
        match (self, value, reverse) {
            (Act::Const, ..) => "Const",
            (Act::Dup, false, _) => "Duplicated",
            (Act::Dup, true, false) => "Dual",
            (Act::Dup, true, true) => "Active",
            (Act::Only, ..) => "DuplicatedOnly",
        }
    }
}

/// What a rule takes besides its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Other {
    /// A source buffer (`copy`, `copy2d`, `copy3d`, ...).
    Src,
    /// Nothing (`memset`).
    None,
    /// A value taken by value (`fill`).
    Value,
}

/// The host image of one rule call: primals, and one shadow (tangent or cotangent) per lane.
#[derive(Clone, Debug)]
pub(crate) struct Args<T> {
    pub(crate) y: Vec<T>,
    pub(crate) dy: Vec<Vec<T>>,
    pub(crate) x: Vec<T>,
    pub(crate) dx: Vec<Vec<T>>,
    pub(crate) v: T,
    pub(crate) dv: Vec<T>,
}

/// A rule as the checks see it. Each call makes the buffers from `a`, runs, and reads them back
/// into `a`; a `Const` side's shadows are not passed.
pub(crate) trait Subject {
    type T: Differentiable;
    const OTHER: Other;
    /// The forward rule with these activities and width (a fill's value: `Dual` for `Dup`).
    fn forward(&mut self, dst: Act, other: Act, width: usize, a: &mut Args<Self::T>) -> Result<()>;
    /// The augmented primal then (unless `aug_only`) the reverse rule; returns the value's
    /// gradient per lane (a fill with an `Active` value; empty otherwise).
    fn reverse(
        &mut self,
        dst: Act,
        other: Act,
        width: usize,
        a: &mut Args<Self::T>,
        aug_only: bool,
    ) -> Result<Vec<Self::T>>;
}

/// One lane's tangents: of the destination, the source, the value.
type Tangents<T> = (Vec<T>, Vec<T>, T);
/// One lane's cotangent seeds: of the destination, and the source's starting shadow.
type Seeds<T> = (Vec<T>, Vec<T>);

/// The random inputs every check draws from, each reproducible from the shapes' seed and its
/// own number, so that a check sees the same inputs whichever checks ran before it.
struct Inputs<T> {
    /// The destination's length.
    nd: usize,
    seed: u64,
    /// The source and the value every call is given.
    x0: Vec<T>,
    v0: T,
    /// The destination's contents before the calls after the footprint's.
    y0: Vec<T>,
    /// Per lane (3): the tangents, and the cotangent seeds.
    lanes: Vec<Tangents<T>>,
    cot: Vec<Seeds<T>>,
}

impl<T: Differentiable> Inputs<T> {
    /// The inputs of a destination of `nd` elements and a source of `ns` (0 without one).
    fn new(nd: usize, ns: usize, seed: u64) -> Inputs<T> {
        let mut i = Inputs {
            nd,
            seed,
            x0: vec![],
            v0: T::zero(),
            y0: vec![],
            lanes: vec![],
            cot: vec![],
        };
        (i.x0, i.v0, i.y0) = (i.rv(ns, 1), i.one(2), i.rv(nd, 6));
        i.lanes = (0..3)
            .map(|k| (i.rv(nd, 10 + k), i.rv(ns, 20 + k), i.one(30 + k)))
            .collect();
        i.cot = (0..3)
            .map(|k| (i.rv(nd, 40 + k), i.rv(ns, 50 + k)))
            .collect();
        i
    }

    /// `n` random elements, the `k`-th draw of the seed.
    fn rv(&self, n: usize, k: u64) -> Vec<T> {
        random_vec::<T>(n, self.seed.wrapping_mul(31).wrapping_add(k))
    }

    fn one(&self, k: u64) -> T {
        self.rv(1, k)[0]
    }

    /// A forward call's arguments: `y0`, `x0`, `v0` and these lanes' tangents.
    fn tangent_args(&self, lanes: &[Tangents<T>]) -> Args<T> {
        Args {
            y: self.y0.clone(),
            dy: lanes.iter().map(|l| l.0.clone()).collect(),
            x: self.x0.clone(),
            dx: lanes.iter().map(|l| l.1.clone()).collect(),
            v: self.v0,
            dv: lanes.iter().map(|l| l.2).collect(),
        }
    }

    /// A reverse call's arguments: `y0`, `x0`, `v0` and these lanes' seeds.
    fn seed_args(&self, lanes: &[Seeds<T>]) -> Args<T> {
        Args {
            y: self.y0.clone(),
            dy: lanes.iter().map(|l| l.0.clone()).collect(),
            x: self.x0.clone(),
            dx: lanes.iter().map(|l| l.1.clone()).collect(),
            v: self.v0,
            dv: vec![],
        }
    }
}

/// Per lane: the forward's `d_dst` with the other argument's tangent as drawn, then zero.
type FwdRef<T> = Vec<Vec<Vec<T>>>;
/// Per lane: the reverse's `d_dst`, `d_src` and the value's gradient.
type RevRef<T> = Vec<(Vec<T>, Option<Vec<T>>, Option<T>)>;

/// What the width-1 `Duplicated` calls gave, against which every other call is compared.
struct References<T> {
    /// The primitive's result on `y0`, `x0`, `v0`.
    fx: Vec<T>,
    /// The forward references ([`FwdRef`]).
    fwd: FwdRef<T>,
    /// The reverse references ([`RevRef`]).
    rev: RevRef<T>,
}

/// Every check, on `s`: see the module docs of `testing` for what each one catches.
pub(crate) fn check_all<S: Subject>(s: &mut S, shapes: Shapes) -> Result<Report, CheckError> {
    shapes.validate().map_err(|error| CheckError::Run {
        during: "reading the shapes".into(),
        error,
    })?;
    let ns = if S::OTHER == Other::Src {
        shapes.src
    } else {
        0
    };
    let inputs = Inputs::new(shapes.dst, ns, shapes.seed);
    let mut run = Run::new(s, shapes);
    let mut checks = vec![Check::Primal, Check::Footprint];
    let footprint = footprint::check(&mut run, &inputs)?;
    checks.push(Check::FiniteDifferences);
    let (fx, fwd) = forward::check(&mut run, &inputs)?;
    checks.push(Check::DotProduct);
    let rev = reverse::check(&mut run, &inputs, &fx, &fwd)?;
    let refs = References { fx, fwd, rev };
    checks.push(Check::Activity);
    checks.push(Check::Batch);
    activity::check(&mut run, &inputs, &refs)?;
    run.finish(checks, footprint)
}
