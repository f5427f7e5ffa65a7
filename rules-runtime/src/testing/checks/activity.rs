//! [`Check::Activity`] and [`Check::Batch`]: every activity pair at widths 1, 2 and 3 against
//! the width-1 `Duplicated` references, forward and reverse.

#![forbid(unsafe_code)]

use super::run::{Run, call_name};
use super::{Act, Inputs, Other, References, Subject};
use crate::testing::report::{Check, CheckError};

/// The activities of the other argument worth checking.
fn other_acts(other: Other) -> &'static [Act] {
    match other {
        Other::Src => &[Act::Const, Act::Dup, Act::Only],
        Other::Value => &[Act::Const, Act::Dup],
        Other::None => &[Act::Const],
    }
}

fn active(a: Act) -> bool {
    a != Act::Const
}

/// Every activity pair and width (`Const` on both sides only at width 1: it has no lanes).
pub(super) fn check<S: Subject>(
    run: &mut Run<'_, S>,
    i: &Inputs<S::T>,
    refs: &References<S::T>,
) -> Result<(), CheckError> {
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
                forward(run, i, refs, check, (dst, o), width)?;
                // A fill's value has no `DuplicatedOnly`; a memset has no other argument.
                if S::OTHER == Other::Src || o != Act::Only {
                    reverse(run, i, refs, check, (dst, o), width)?;
                }
            }
        }
    }
    Ok(())
}

/// The forward with these activities: its primal, each active lane's `d_dst` against the
/// reference, and a source's shadows untouched.
fn forward<S: Subject>(
    run: &mut Run<'_, S>,
    i: &Inputs<S::T>,
    refs: &References<S::T>,
    check: Check,
    (dst, o): (Act, Act),
    w: usize,
) -> Result<(), CheckError> {
    let mut a = i.tangent_args(&i.lanes[..w]);
    if !active(dst) {
        a.dy.clear();
    }
    if !active(o) {
        a.dx.clear();
        a.dv.clear();
    }
    let a = run.forward(dst, o, w, a)?;
    let call = call_name(S::OTHER, "forward", dst, o, w);
    run.check_dst_primal(&call, dst, (&i.y0, &refs.fx), &a.y, "the forward's");
    for k in 0..w {
        if active(dst) {
            let expected = &refs.fwd[k][usize::from(!active(o))];
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
                &i.lanes[k].1,
                &a.dx[k],
            );
        }
    }
    Ok(())
}

/// The augmented primal and reverse with these activities: the primal, each active lane's
/// shadows and value gradient against the references, and a `Const` destination's source
/// shadows untouched.
fn reverse<S: Subject>(
    run: &mut Run<'_, S>,
    i: &Inputs<S::T>,
    refs: &References<S::T>,
    check: Check,
    (dst, o): (Act, Act),
    w: usize,
) -> Result<(), CheckError> {
    let mut a = i.seed_args(&i.cot[..w]);
    if !active(dst) {
        a.dy.clear();
    }
    if !active(o) {
        a.dx.clear();
    }
    let (a, g) = run.reverse(dst, o, w, a, false)?;
    let call = call_name(S::OTHER, "augmented_primal + reverse", dst, o, w);
    let whose = "the augmented primal's";
    run.check_dst_primal(&call, dst, (&i.y0, &refs.fx), &a.y, whose);
    let same = "the cotangent against width 1 with Duplicated arguments";
    for k in 0..w {
        let (rd, rs, rg) = &refs.rev[k];
        if active(dst) {
            run.compare(check, &call, Some(k), "d_dst", same, rd, &a.dy[k]);
        }
        if active(o) && S::OTHER == Other::Src {
            let (expected, detail) = if active(dst) {
                (rs.clone().unwrap_or_default(), same)
            } else {
                (i.cot[k].1.clone(), "a Const destination touches no shadow")
            };
            run.compare(check, &call, Some(k), "d_src", detail, &expected, &a.dx[k]);
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
    Ok(())
}
