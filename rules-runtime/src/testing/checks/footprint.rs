//! [`Check::Footprint`]: the elements the primitive writes against those the rule's forward
//! claims (its `d_dst ← 0` with a `Const` source), and the forward's primal on the way.

#![forbid(unsafe_code)]

use super::run::{Run, call_name, shift};
use super::{Act, Args, Inputs, Subject};
use crate::testing::report::{Check, CheckError, Diff, Failure};

/// Runs the primitive on destinations from two ranges its written values cannot all fall in
/// (so every element it writes changes in one of them), and the forward rule with a `Const`
/// source on a `d_dst` of sentinels: an element written by one and not the other is a failure.
/// Returns the indices the primitive writes.
pub(super) fn check<S: Subject>(
    run: &mut Run<'_, S>,
    i: &Inputs<S::T>,
) -> Result<Vec<usize>, CheckError> {
    let nd = i.nd;
    let (hi, lo) = (shift(&i.rv(nd, 3), 3.0), shift(&i.rv(nd, 4), -3.0));
    let (out_hi, out_lo) = (run.primal(&hi, &i.x0, i.v0)?, run.primal(&lo, &i.x0, i.v0)?);
    let written: Vec<bool> = (0..nd)
        .map(|k| out_hi.get(k) != hi.get(k) || out_lo.get(k) != lo.get(k))
        .collect();
    let sentinel = shift(&i.rv(nd, 5), 3.0);
    let a = Args {
        y: hi.clone(),
        dy: vec![sentinel.clone()],
        x: i.x0.clone(),
        dx: vec![],
        v: i.v0,
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
    let claimed: Vec<bool> = (0..nd).map(|k| a.dy[0].get(k) != sentinel.get(k)).collect();
    run.counted();
    let flag = |b: bool| [f64::from(u8::from(b)), 0.0];
    let mismatched: Vec<usize> = (0..nd).filter(|&k| written[k] != claimed[k]).collect();
    if !mismatched.is_empty() {
        let count_w = written.iter().filter(|&&w| w).count();
        let count_c = claimed.iter().filter(|&&w| w).count();
        run.fail(Failure {
            check: Check::Footprint,
            call,
            lane: None,
            buffer: "d_dst",
            diffs: mismatched
                .iter()
                .take(4)
                .map(|&k| Diff {
                    index: k,
                    expected: flag(written[k]),
                    found: flag(claimed[k]),
                })
                .collect(),
            count: mismatched.len(),
            detail: format!(
                "the primitive writes {count_w} element(s) of dst, the rule's forward writes {count_c} of d_dst (1: written, 0: not)"
            ),
        });
    }
    Ok((0..nd).filter(|&k| written[k]).collect())
}
