//! [`Check::FiniteDifferences`]: the forward rule's tangent against the central differences of
//! the primitive, and the forward references the activity and batch checks compare with.

#![forbid(unsafe_code)]

use super::run::{Run, axpy, call_name, close};
use super::{Act, FwdRef, Inputs, Other, Subject, Tangents};
use crate::element::Differentiable;
use crate::testing::report::{Check, CheckError};

/// The primitive's result on the inputs, and the forward references.
type Forwarded<T> = (Vec<T>, FwdRef<T>);

/// For each lane, the width-1 `Duplicated` forward, with the other argument's tangent as drawn
/// and then zero (its tangent when the other argument is `Const`); for lane 0 both against
/// `(f(x + v) − f(x − v)) / 2` and the forward's primal against the primitive's.
///
/// Returns the primitive's result on the inputs, and the references per lane (`[drawn, zero]`).
pub(super) fn check<S: Subject>(
    run: &mut Run<'_, S>,
    i: &Inputs<S::T>,
) -> Result<Forwarded<S::T>, CheckError> {
    let fx = run.primal(&i.y0, &i.x0, i.v0)?;
    let zero_other =
        |(vy, vx, _): &Tangents<S::T>| (vy.clone(), vec![S::T::zero(); vx.len()], S::T::zero());
    let mut fwd_ref = Vec::new();
    for (k, lane) in i.lanes.iter().enumerate() {
        let mut by_other: Vec<Vec<S::T>> = Vec::new();
        for zero in [false, true] {
            if zero && S::OTHER == Other::None {
                // Nothing besides the destination: the same call as above.
                let same = by_other[0].clone();
                by_other.push(same);
                continue;
            }
            let l = if zero { zero_other(lane) } else { lane.clone() };
            let args = i.tangent_args(std::slice::from_ref(&l));
            let a = run.forward(Act::Dup, Act::Dup, 1, args)?;
            if k == 0 {
                let fd = differences(run, i, &l)?;
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
    Ok((fx, fwd_ref))
}

/// `(f(x + v) − f(x − v)) / 2` of the primitive at the inputs, in direction `(vy, vx, vv)`.
fn differences<S: Subject>(
    run: &mut Run<'_, S>,
    i: &Inputs<S::T>,
    (vy, vx, vv): &Tangents<S::T>,
) -> Result<Vec<S::T>, CheckError> {
    let plus = run.primal(
        &axpy(&i.y0, 1.0, vy),
        &axpy(&i.x0, 1.0, vx),
        axpy(&[i.v0], 1.0, &[*vv])[0],
    )?;
    let minus = run.primal(
        &axpy(&i.y0, -1.0, vy),
        &axpy(&i.x0, -1.0, vx),
        axpy(&[i.v0], -1.0, &[*vv])[0],
    )?;
    Ok(plus
        .iter()
        .zip(&minus)
        .map(|(p, m)| {
            let (p, m) = (p.to_parts(), m.to_parts());
            // The same value on both sides (a bit pattern, NaN included) does not depend on
            // the inputs.
            let part = |j: usize| {
                if close(p[j], m[j], 0.0) {
                    0.0
                } else {
                    (p[j] - m[j]) / 2.0
                }
            };
            S::T::from_parts([part(0), part(1)])
        })
        .collect())
}
