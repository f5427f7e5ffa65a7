//! The checks of a rule, written once against [`Subject`]: a rule seen as a function of host
//! vectors, whatever memory its buffers live in and whatever its kind.
//!
//! The primitive computes `f(dst_in, src, value) = dst_out`; it is affine (a copy, memset or
//! fill), so with inputs on the grid of multiples of 1/64 and the step h = 1 the central
//! differences `(f(x + v) − f(x − v)) / 2` are its derivative `J v` exactly.

#![forbid(unsafe_code)]

use super::random_vec;
use super::report::{Check, CheckError, Diff, Failure, Report, Shapes};
use crate::element::Differentiable;
use crate::error::Result;

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

/// `a + s·b`, element by element, in f64 then rounded to `T` (exact on the grid).
fn axpy<T: Differentiable>(a: &[T], s: f64, b: &[T]) -> Vec<T> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let (x, y) = (x.to_parts(), y.to_parts());
            T::from_parts([x[0] + s * y[0], x[1] + s * y[1]])
        })
        .collect()
}

fn shift<T: Differentiable>(a: &[T], by: f64) -> Vec<T> {
    a.iter()
        .map(|x| {
            let x = x.to_parts();
            T::from_parts([x[0] + by, x[1]])
        })
        .collect()
}

/// Whether two parts agree within `tol` (NaNs agree with NaNs: a memset's bit pattern may be one).
fn close(a: f64, b: f64, tol: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

fn differs<T: Differentiable>(expected: &[T], found: &[T], tol: f64) -> (Vec<Diff>, usize) {
    let mut diffs = Vec::new();
    let mut count = expected.len().abs_diff(found.len());
    for (i, (e, f)) in expected.iter().zip(found).enumerate() {
        let (e, f) = (e.to_parts(), f.to_parts());
        if !(close(e[0], f[0], tol) && close(e[1], f[1], tol)) {
            count += 1;
            if diffs.len() < 4 {
                diffs.push(Diff {
                    index: i,
                    expected: e,
                    found: f,
                });
            }
        }
    }
    (diffs, count)
}

/// One lane's tangents: of the destination, the source, the value.
type Tangents<T> = (Vec<T>, Vec<T>, T);
/// One lane's cotangent seeds: of the destination, and the source's starting shadow.
type Seeds<T> = (Vec<T>, Vec<T>);
/// A reverse's buffers and the value's gradient.
type Reversed<T> = (Args<T>, Vec<T>);

/// The checks' state: the subject, its shapes, and what was found so far.
struct Run<'a, S: Subject> {
    s: &'a mut S,
    shapes: Shapes,
    failures: Vec<Failure>,
    calls: usize,
    comparisons: usize,
}

/// Names a call for messages.
fn call_name(other: Other, what: &str, dst: Act, o: Act, width: usize) -> String {
    let reverse = what != "forward";
    let o = match other {
        Other::Src => format!(", src {}", o.word(false, reverse)),
        Other::Value => format!(", value {}", o.word(true, reverse)),
        Other::None => String::new(),
    };
    let mut s = format!("{what}(dst {}{o})", dst.word(false, reverse));
    if width > 1 {
        s += &format!(", width {width}");
    }
    s
}

impl<S: Subject> Run<'_, S> {
    fn ctx<R>(&mut self, during: impl FnOnce() -> String, r: Result<R>) -> Result<R, CheckError> {
        self.calls += 1;
        r.map_err(|error| CheckError::Run {
            during: during(),
            error,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn compare(
        &mut self,
        check: Check,
        call: &str,
        lane: Option<usize>,
        buffer: &'static str,
        detail: &str,
        expected: &[S::T],
        found: &[S::T],
    ) {
        self.comparisons += 1;
        let (diffs, count) = differs(expected, found, self.shapes.element_tol());
        if count > 0 {
            self.failures.push(Failure {
                check,
                call: call.to_string(),
                lane,
                buffer,
                diffs,
                count,
                detail: detail.to_string(),
            });
        }
    }

    fn forward(
        &mut self,
        dst: Act,
        o: Act,
        width: usize,
        mut a: Args<S::T>,
    ) -> Result<Args<S::T>, CheckError> {
        let r = self.s.forward(dst, o, width, &mut a);
        self.ctx(|| call_name(S::OTHER, "forward", dst, o, width), r)?;
        Ok(a)
    }

    fn reverse(
        &mut self,
        dst: Act,
        o: Act,
        width: usize,
        mut a: Args<S::T>,
        aug_only: bool,
    ) -> Result<Reversed<S::T>, CheckError> {
        let r = self.s.reverse(dst, o, width, &mut a, aug_only);
        let what = if aug_only {
            "augmented_primal"
        } else {
            "augmented_primal + reverse"
        };
        let g = self.ctx(|| call_name(S::OTHER, what, dst, o, width), r)?;
        Ok((a, g))
    }

    /// The primitive alone: `forward` on `Const` arguments.
    fn primal(&mut self, y: &[S::T], x: &[S::T], v: S::T) -> Result<Vec<S::T>, CheckError> {
        let a = Args {
            y: y.to_vec(),
            dy: vec![],
            x: x.to_vec(),
            dx: vec![],
            v,
            dv: vec![],
        };
        Ok(self.forward(Act::Const, Act::Const, 1, a)?.y)
    }
}

/// The activities of the other argument worth checking.
fn other_acts(other: Other) -> &'static [Act] {
    match other {
        Other::Src => &[Act::Const, Act::Dup, Act::Only],
        Other::Value => &[Act::Const, Act::Dup],
        Other::None => &[Act::Const],
    }
}

/// Every check, on `s`: see the module docs of `testing` for what each one catches.
pub(crate) fn check_all<S: Subject>(s: &mut S, shapes: Shapes) -> Result<Report, CheckError> {
    let (nd, ns) = (
        shapes.dst,
        if S::OTHER == Other::Src {
            shapes.src
        } else {
            0
        },
    );
    let seed = shapes.seed;
    let mut run = Run {
        s,
        shapes,
        failures: vec![],
        calls: 0,
        comparisons: 0,
    };
    let rv = |n: usize, k: u64| random_vec::<S::T>(n, seed.wrapping_mul(31).wrapping_add(k));
    let one = |k: u64| rv(1, k)[0];
    let mut checks = vec![Check::Primal, Check::Footprint];

    // Footprint: what the primitive writes (destinations from two ranges the written values
    // cannot all fall in) against what the forward rule zeroes with a `Const` source.
    let (x0, v0) = (rv(ns, 1), one(2));
    let (hi, lo) = (shift(&rv(nd, 3), 3.0), shift(&rv(nd, 4), -3.0));
    let (out_hi, out_lo) = (run.primal(&hi, &x0, v0)?, run.primal(&lo, &x0, v0)?);
    let written: Vec<bool> = (0..nd)
        .map(|i| out_hi.get(i) != hi.get(i) || out_lo.get(i) != lo.get(i))
        .collect();
    let sentinel = shift(&rv(nd, 5), 3.0);
    let a = Args {
        y: hi.clone(),
        dy: vec![sentinel.clone()],
        x: x0.clone(),
        dx: vec![],
        v: v0,
        dv: vec![],
    };
    let call = call_name(S::OTHER, "forward", Act::Dup, Act::Const, 1);
    let a = run.forward(Act::Dup, Act::Const, 1, a)?;
    run.compare(
        Check::Primal,
        &call,
        None,
        "dst",
        "the forward's primal result against the primitive run alone",
        &out_hi,
        &a.y,
    );
    let claimed: Vec<bool> = (0..nd).map(|i| a.dy[0].get(i) != sentinel.get(i)).collect();
    run.comparisons += 1;
    let flag = |b: bool| [f64::from(u8::from(b)), 0.0];
    let mismatched: Vec<usize> = (0..nd).filter(|&i| written[i] != claimed[i]).collect();
    if !mismatched.is_empty() {
        let count_w = written.iter().filter(|&&w| w).count();
        let count_c = claimed.iter().filter(|&&w| w).count();
        run.failures.push(Failure {
            check: Check::Footprint,
            call,
            lane: None,
            buffer: "d_dst",
            diffs: mismatched
                .iter()
                .take(4)
                .map(|&i| Diff {
                    index: i,
                    expected: flag(written[i]),
                    found: flag(claimed[i]),
                })
                .collect(),
            count: mismatched.len(),
            detail: format!(
                "the primitive writes {count_w} element(s) of dst, the rule's forward writes {count_c} of d_dst (1: written, 0: not)"
            ),
        });
    }
    let footprint = (0..nd).filter(|&i| written[i]).collect();

    // Finite differences of the primitive against the forward rule, lane by lane.
    checks.push(Check::FiniteDifferences);
    let y0 = rv(nd, 6);
    let fx = run.primal(&y0, &x0, v0)?;
    // Tangents of lane k: (vy, vx, vv).
    let tangents = |k: u64| (rv(nd, 10 + k), rv(ns, 20 + k), one(30 + k));
    let tangent_args = |lanes: &[Tangents<S::T>]| Args {
        y: y0.clone(),
        dy: lanes.iter().map(|l| l.0.clone()).collect(),
        x: x0.clone(),
        dx: lanes.iter().map(|l| l.1.clone()).collect(),
        v: v0,
        dv: lanes.iter().map(|l| l.2).collect(),
    };
    let zero_other = |(vy, vx, vv): &(Vec<S::T>, Vec<S::T>, S::T)| {
        let _ = vv;
        (vy.clone(), vec![S::T::zero(); vx.len()], S::T::zero())
    };
    let lanes: Vec<_> = (0..3).map(tangents).collect();
    // The reference of lane k: the width-1 `Duplicated` forward (its other tangent zero when
    // the other argument is `Const`).
    let mut fwd_ref = Vec::new();
    for (k, lane) in lanes.iter().enumerate() {
        let mut by_other: Vec<Vec<S::T>> = Vec::new();
        for zero in [false, true] {
            if zero && S::OTHER == Other::None {
                // Nothing besides the destination: the same call as above.
                let same = by_other[0].clone();
                by_other.push(same);
                continue;
            }
            let l = if zero { zero_other(lane) } else { lane.clone() };
            let a = run.forward(
                Act::Dup,
                Act::Dup,
                1,
                tangent_args(std::slice::from_ref(&l)),
            )?;
            if k == 0 {
                let (vy, vx, vv) = &l;
                let plus = run.primal(
                    &axpy(&y0, 1.0, vy),
                    &axpy(&x0, 1.0, vx),
                    axpy(&[v0], 1.0, &[*vv])[0],
                )?;
                let minus = run.primal(
                    &axpy(&y0, -1.0, vy),
                    &axpy(&x0, -1.0, vx),
                    axpy(&[v0], -1.0, &[*vv])[0],
                )?;
                let fd: Vec<S::T> = plus
                    .iter()
                    .zip(&minus)
                    .map(|(p, m)| {
                        let (p, m) = (p.to_parts(), m.to_parts());
                        // The same value on both sides (a bit pattern, NaN included) does not
                        // depend on the inputs.
                        let part = |i: usize| {
                            if close(p[i], m[i], 0.0) {
                                0.0
                            } else {
                                (p[i] - m[i]) / 2.0
                            }
                        };
                        S::T::from_parts([part(0), part(1)])
                    })
                    .collect();
                let call = call_name(S::OTHER, "forward", Act::Dup, Act::Dup, 1);
                let detail = if zero {
                    "d_dst against (f(x + v) − f(x − v)) / 2, the other argument's tangent 0"
                } else {
                    "d_dst against (f(x + v) − f(x − v)) / 2"
                };
                run.compare(
                    Check::FiniteDifferences,
                    &call,
                    Some(0),
                    "d_dst",
                    detail,
                    &fd,
                    &a.dy[0],
                );
                run.compare(
                    Check::Primal,
                    &call,
                    None,
                    "dst",
                    "the forward's primal result against the primitive run alone",
                    &fx,
                    &a.y,
                );
            }
            by_other.push(a.dy[0].clone());
        }
        fwd_ref.push(by_other);
    }
    // The dot product: the reverse seeded with w in d_dst, on top of u in d_src.
    checks.push(Check::DotProduct);
    let seeds = |k: u64| (rv(nd, 40 + k), rv(ns, 50 + k));
    let seed_args = |lanes: &[Seeds<S::T>]| Args {
        y: y0.clone(),
        dy: lanes.iter().map(|l| l.0.clone()).collect(),
        x: x0.clone(),
        dx: lanes.iter().map(|l| l.1.clone()).collect(),
        v: v0,
        dv: vec![],
    };
    let cot: Vec<_> = (0..3).map(seeds).collect();
    let mut rev_ref = Vec::new();
    for (k, l) in cot.iter().enumerate() {
        let (a, g) = run.reverse(
            Act::Dup,
            Act::Dup,
            1,
            seed_args(std::slice::from_ref(l)),
            false,
        )?;
        if k == 0 {
            let call = call_name(
                S::OTHER,
                "augmented_primal + reverse",
                Act::Dup,
                Act::Dup,
                1,
            );
            run.compare(
                Check::Primal,
                &call,
                None,
                "dst",
                "the augmented primal's result against the primitive run alone",
                &fx,
                &a.y,
            );
            let (w, u) = l;
            let (vy, vx, vv) = &lanes[0];
            let jv = &fwd_ref[0][0];
            let jtw_src = axpy(&a.dx[0], -1.0, u);
            let dot = super::dot::<S::T>;
            let lhs = dot(jv, w);
            let mut rhs = dot(vy, &a.dy[0]) + dot(vx, &jtw_src);
            if let Some(g) = g.first() {
                rhs += dot(&[*vv], &[*g]);
            }
            run.comparisons += 1;
            let rel = (lhs - rhs).abs() / lhs.abs().max(rhs.abs()).max(1.0);
            if rel.is_nan() || rel > run.shapes.dot_tol::<S::T>() {
                run.failures.push(Failure {
                    check: Check::DotProduct,
                    call,
                    lane: Some(0),
                    buffer: "d_dst, d_src, d_value",
                    diffs: vec![],
                    count: 0,
                    detail: format!(
                        "⟨J v, w⟩ = {lhs} (the forward rule) but ⟨v, Jᵀ w⟩ = {rhs} (the reverse rule): the reverse is not the forward's transpose"
                    ),
                });
            }
        }
        rev_ref.push((a.dy[0].clone(), a.dx.first().cloned(), g.first().copied()));
    }
    // The augmented primal alone touches no shadow.
    let (a, _) = run.reverse(Act::Dup, Act::Dup, 1, seed_args(&[cot[0].clone()]), true)?;
    let call = call_name(S::OTHER, "augmented_primal", Act::Dup, Act::Dup, 1);
    run.compare(
        Check::Primal,
        &call,
        Some(0),
        "d_dst",
        "an augmented primal leaves the shadows as they were",
        &cot[0].0,
        &a.dy[0],
    );
    if S::OTHER == Other::Src {
        run.compare(
            Check::Primal,
            &call,
            Some(0),
            "d_src",
            "an augmented primal leaves the shadows as they were",
            &cot[0].1,
            &a.dx[0],
        );
    }

    // Every activity, widths 1, 2 and 3, against the width-1 `Duplicated` references.
    checks.push(Check::Activity);
    checks.push(Check::Batch);
    for width in 1..=3 {
        for &dst in &[Act::Const, Act::Dup, Act::Only] {
            for &o in other_acts(S::OTHER) {
                if dst == Act::Const && o == Act::Const && width > 1 {
                    continue;
                }
                let check = if width == 1 {
                    Check::Activity
                } else {
                    Check::Batch
                };
                let active = |a: Act| a != Act::Const;
                let w = width;
                // Forward.
                let lanes_in: Vec<_> = lanes[..w].to_vec();
                let mut a = tangent_args(&lanes_in);
                if !active(dst) {
                    a.dy.clear();
                }
                if !active(o) {
                    a.dx.clear();
                    a.dv.clear();
                }
                let a = run.forward(dst, o, w, a)?;
                let call = call_name(S::OTHER, "forward", dst, o, w);
                check_dst_primal(&mut run, check, &call, dst, &y0, &fx, &a.y, "the forward's");
                for k in 0..w {
                    if active(dst) {
                        let expected = &fwd_ref[k][usize::from(!active(o))];
                        run.compare(
                            check,
                            &call,
                            Some(k),
                            "d_dst",
                            "the tangent against width 1 with Duplicated arguments",
                            expected,
                            &a.dy[k],
                        );
                    }
                    if active(o) && S::OTHER == Other::Src {
                        run.compare(
                            check,
                            &call,
                            Some(k),
                            "d_src",
                            "a forward rule never writes the source's shadow",
                            &lanes[k].1,
                            &a.dx[k],
                        );
                    }
                }
                // Reverse.
                if S::OTHER == Other::Src || o != Act::Only {
                    let mut a = seed_args(&cot[..w]);
                    if !active(dst) {
                        a.dy.clear();
                    }
                    if !active(o) {
                        a.dx.clear();
                    }
                    let (a, g) = run.reverse(dst, o, w, a, false)?;
                    let call = call_name(S::OTHER, "augmented_primal + reverse", dst, o, w);
                    check_dst_primal(
                        &mut run,
                        check,
                        &call,
                        dst,
                        &y0,
                        &fx,
                        &a.y,
                        "the augmented primal's",
                    );
                    for k in 0..w {
                        let (rd, rs, rg) = &rev_ref[k];
                        if active(dst) {
                            run.compare(
                                check,
                                &call,
                                Some(k),
                                "d_dst",
                                "the cotangent against width 1 with Duplicated arguments",
                                rd,
                                &a.dy[k],
                            );
                        }
                        if active(o) && S::OTHER == Other::Src {
                            let (expected, detail) = if active(dst) {
                                (
                                    rs.clone().unwrap_or_default(),
                                    "the cotangent against width 1 with Duplicated arguments",
                                )
                            } else {
                                (cot[k].1.clone(), "a Const destination touches no shadow")
                            };
                            run.compare(
                                check,
                                &call,
                                Some(k),
                                "d_src",
                                detail,
                                &expected,
                                &a.dx[k],
                            );
                        }
                        if active(o) && S::OTHER == Other::Value && active(dst) {
                            let found: Vec<S::T> = g.get(k).copied().into_iter().collect();
                            let expected: Vec<S::T> = rg.iter().copied().collect();
                            run.compare(
                                check,
                                &call,
                                Some(k),
                                "d_value",
                                "the value's gradient against width 1 with Duplicated arguments",
                                &expected,
                                &found,
                            );
                        }
                    }
                }
            }
        }
    }

    if run.failures.is_empty() {
        Ok(Report {
            calls: run.calls,
            comparisons: run.comparisons,
            checks,
            footprint,
        })
    } else {
        Err(CheckError::Failed(run.failures))
    }
}

/// A destination's primal after a rule: what the primitive computes, or, for `DuplicatedOnly`
/// (whose primal may be skipped), either that or its old contents.
#[allow(clippy::too_many_arguments)]
fn check_dst_primal<S: Subject>(
    run: &mut Run<'_, S>,
    check: Check,
    call: &str,
    dst: Act,
    old: &[S::T],
    computed: &[S::T],
    found: &[S::T],
    whose: &str,
) {
    let tol = run.shapes.element_tol();
    if dst == Act::Only && differs(old, found, tol).1 == 0 {
        run.comparisons += 1;
        return;
    }
    let _ = check;
    run.compare(
        Check::Primal,
        call,
        None,
        "dst",
        &format!("{whose} primal result against the primitive run alone"),
        computed,
        found,
    );
}
