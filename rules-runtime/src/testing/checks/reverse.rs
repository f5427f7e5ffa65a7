//! [`Check::DotProduct`]: ⟨J v, w⟩ from the forward rule against ⟨v, Jᵀ w⟩ from the reverse,
//! the reverse references the activity and batch checks compare with, and an augmented primal
//! that must leave every shadow alone.

#![forbid(unsafe_code)]

use super::run::{Run, axpy, call_name};
use super::{Act, FwdRef, Inputs, Other, RevRef, Subject};
use crate::testing::report::{Check, CheckError, Failure};

/// For each lane, the width-1 `Duplicated` reverse seeded with `w` in `d_dst` on top of `u` in
/// `d_src`; for lane 0 the dot product with the forward reference `fwd[0][0]` (`J v`), read back
/// as `d_src`'s increment, `d_dst` after it, and the value's gradient, and the primal against
/// `fx`. Then the augmented primal alone, whose shadows must read back as seeded.
pub(super) fn check<S: Subject>(
    run: &mut Run<'_, S>,
    i: &Inputs<S::T>,
    fx: &[S::T],
    fwd: &FwdRef<S::T>,
) -> Result<RevRef<S::T>, CheckError> {
    let mut rev_ref = Vec::new();
    for (k, l) in i.cot.iter().enumerate() {
        let args = i.seed_args(std::slice::from_ref(l));
        let (a, g) = run.reverse(Act::Dup, Act::Dup, 1, args, false)?;
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
                fx,
                &a.y,
            );
            let (w, u) = l;
            let (vy, vx, vv) = &i.lanes[0];
            let jv = &fwd[0][0];
            let jtw_src = axpy(&a.dx[0], -1.0, u);
            let dot = crate::testing::dot::<S::T>;
            let lhs = dot(jv, w);
            let mut rhs = dot(vy, &a.dy[0]) + dot(vx, &jtw_src);
            if let Some(g) = g.first() {
                rhs += dot(&[*vv], &[*g]);
            }
            run.counted();
            let rel = (lhs - rhs).abs() / lhs.abs().max(rhs.abs()).max(1.0);
            if rel.is_nan() || rel > run.shapes.dot_tol::<S::T>() {
                run.fail(Failure {
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
    let args = i.seed_args(&[i.cot[0].clone()]);
    let (a, _) = run.reverse(Act::Dup, Act::Dup, 1, args, true)?;
    let call = call_name(S::OTHER, "augmented_primal", Act::Dup, Act::Dup, 1);
    let untouched = "an augmented primal leaves the shadows as they were";
    run.compare(
        Check::Primal,
        &call,
        Some(0),
        "d_dst",
        untouched,
        &i.cot[0].0,
        &a.dy[0],
    );
    if S::OTHER == Other::Src {
        run.compare(
            Check::Primal,
            &call,
            Some(0),
            "d_src",
            untouched,
            &i.cot[0].1,
            &a.dx[0],
        );
    }
    Ok(rev_ref)
}
