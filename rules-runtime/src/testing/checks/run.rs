//! What the checks share: the subject's calls (counted, their errors named), the element
//! comparisons (counted, their failures kept), and the arithmetic on host images.

#![forbid(unsafe_code)]

use super::{Act, Args, Other, Subject};
use crate::element::Differentiable;
use crate::error::Result;
use crate::testing::report::{Check, CheckError, Diff, Failure, Report, Shapes};

/// `a + s·b`, element by element, in f64 then rounded to `T` (exact on the grid).
pub(super) fn axpy<T: Differentiable>(a: &[T], s: f64, b: &[T]) -> Vec<T> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let (x, y) = (x.to_parts(), y.to_parts());
            T::from_parts([x[0] + s * y[0], x[1] + s * y[1]])
        })
        .collect()
}

/// Every element's real part moved by `by`.
pub(super) fn shift<T: Differentiable>(a: &[T], by: f64) -> Vec<T> {
    a.iter()
        .map(|x| {
            let x = x.to_parts();
            T::from_parts([x[0] + by, x[1]])
        })
        .collect()
}

/// Whether two parts agree within `tol` (NaNs agree with NaNs: a memset's bit pattern may be one).
pub(super) fn close(a: f64, b: f64, tol: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

/// The first differing elements (at most 4) and how many differ.
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

/// Names a call for messages.
pub(super) fn call_name(other: Other, what: &str, dst: Act, o: Act, width: usize) -> String {
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

/// A reverse's buffers and the value's gradient.
type Reversed<T> = (Args<T>, Vec<T>);

/// The checks' state: the subject, its shapes, and what was found so far.
pub(super) struct Run<'a, S: Subject> {
    s: &'a mut S,
    pub(super) shapes: Shapes,
    failures: Vec<Failure>,
    calls: usize,
    comparisons: usize,
}

impl<'a, S: Subject> Run<'a, S> {
    pub(super) fn new(s: &'a mut S, shapes: Shapes) -> Self {
        Run {
            s,
            shapes,
            failures: vec![],
            calls: 0,
            comparisons: 0,
        }
    }

    /// The report, or every failure found.
    pub(super) fn finish(
        self,
        checks: Vec<Check>,
        footprint: Vec<usize>,
    ) -> Result<Report, CheckError> {
        if self.failures.is_empty() {
            Ok(Report {
                calls: self.calls,
                comparisons: self.comparisons,
                checks,
                footprint,
            })
        } else {
            Err(CheckError::Failed(self.failures))
        }
    }

    fn ctx<R>(&mut self, during: impl FnOnce() -> String, r: Result<R>) -> Result<R, CheckError> {
        self.calls += 1;
        r.map_err(|error| CheckError::Run {
            during: during(),
            error,
        })
    }

    /// A comparison of a kind the element comparison does not cover, counted; its failure, if
    /// any, is the caller's to [`Run::fail`].
    pub(super) fn counted(&mut self) {
        self.comparisons += 1;
    }

    pub(super) fn fail(&mut self, f: Failure) {
        self.failures.push(f);
    }

    /// Compares two buffers element by element, within the shapes' tolerance.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn compare(
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

    pub(super) fn forward(
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

    pub(super) fn reverse(
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
    pub(super) fn primal(
        &mut self,
        y: &[S::T],
        x: &[S::T],
        v: S::T,
    ) -> Result<Vec<S::T>, CheckError> {
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

    /// A destination's primal after a rule: what the primitive computes, or, for
    /// `DuplicatedOnly` (whose primal may be skipped), either that or its old contents.
    pub(super) fn check_dst_primal(
        &mut self,
        call: &str,
        dst: Act,
        (old, computed): (&[S::T], &[S::T]),
        found: &[S::T],
        whose: &str,
    ) {
        let tol = self.shapes.element_tol();
        if dst == Act::Only && differs(old, found, tol).1 == 0 {
            self.comparisons += 1;
            return;
        }
        self.compare(
            Check::Primal,
            call,
            None,
            "dst",
            &format!("{whose} primal result against the primitive run alone"),
            computed,
            found,
        );
    }
}
