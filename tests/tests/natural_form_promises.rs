//! Reproducers of what the hunt found (hunt-scratch/TABLE.md), each `#[ignore]`d and asserting
//! the behaviour the project promises, so that each fails until it is fixed:
//!
//! cargo test -p rules-tests --test hunt_repro -- --ignored
//! cargo test -p rules-tests --features checked --test hunt_repro -- --ignored

use rules_runtime::Error;
use rules_runtime::prelude::*;
use rules_runtime::testing::{CheckError, Shapes, check_copy};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A "copy" that appends to its `Vec` destination (grows it).
#[derivative_rule(copy)]
pub fn vec_extend(#[dst] dst: &mut Vec<f32>, #[src] src: &Vec<f32>) {
    dst.extend_from_slice(src);
}

/// Promise: errors are typed, nothing panics. In checked mode the compare indexes past the
/// source: "index out of bounds: the len is 3 but the index is 3" at
/// rules-runtime/src/ops/check.rs:87. Without the checked mode the forward returns Ok with the
/// destination grown to 6 and its 3-element shadow zeroed (a wrong tangent, no error); the
/// one-call check reports it (LengthMismatch during augmented_primal + reverse).
#[test]
#[ignore = "reproducer: fails until fixed"]
fn a_primitive_that_grows_its_vec_destination_is_a_typed_error() {
    let x = vec![1.0f32, 2.0, 3.0];
    let (mut y, mut dy) = (vec![0.0f32; 3], vec![5.0f32; 3]);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        vec_extend_rule().forward(Duplicated::new(&mut y, &mut dy), Const(&x))
    }));
    let r = r.expect("the rule panicked");
    assert!(
        r.is_err(),
        "a primal that changed dst's length was accepted: y = {y:?}, dy = {dy:?}"
    );
}

/// A right copy between slices.
#[derivative_rule(copy)]
pub fn plain(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

/// Promise: the one-call checks never panic on bad input. `Shapes::len(usize::MAX / 2)` panics
/// with "capacity overflow" in `testing::random_vec`.
#[test]
#[ignore = "reproducer: fails until fixed"]
fn a_huge_shape_is_a_typed_error() {
    let r = std::panic::catch_unwind(|| check_copy(&mut plain_rule(), Shapes::len(usize::MAX / 2)));
    assert!(matches!(r, Ok(Err(_))), "the check panicked");
}

/// "A copy" that scales by 2.
#[derivative_rule(copy)]
pub fn scale2(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = 2.0 * s;
    }
}

/// A wrong rule must not pass: `Shapes::tolerance(f64::NAN)` makes every comparison pass (the
/// check reports success for a copy that scales). Without the checked mode, nothing reports it.
#[test]
#[ignore = "reproducer: fails until fixed"]
fn a_nan_tolerance_does_not_pass_a_wrong_rule() {
    let r = check_copy(&mut scale2_rule(), Shapes::len(4).tolerance(f64::NAN));
    assert!(
        r.is_err(),
        "a scaling copy passed with a NaN tolerance: {r:?}"
    );
}

/// A right copy, but by assignment: the `Vec` is reallocated (same values).
#[derivative_rule(copy)]
pub fn vec_assign(#[dst] dst: &mut Vec<f32>, #[src] src: &Vec<f32>) {
    *dst = src.clone();
}

/// A right primitive (its derivative is a copy's) whose reverse is refused with
/// `TapeMismatch("the tape was made by a call on other primal buffers: give each reverse the tape
/// of its own augmented primal")`: the caller did; the primitive moved `dst`. The one-call check
/// reports the same error. Expected: the reverse succeeds, or the error names the cause (the
/// primitive reallocated its destination).
#[test]
#[ignore = "reproducer: fails until fixed"]
fn a_reallocating_primitive_is_not_blamed_on_the_caller() {
    let x = vec![1.0f32, 2.0, 3.0];
    let (mut y, mut dy, mut dx) = (vec![0.0f32; 3], vec![0.0f32; 3], vec![0.0f32; 3]);
    let tape = vec_assign_rule()
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    dy = vec![1.0; 3];
    let r = vec_assign_rule().reverse(
        tape,
        Duplicated::new(&mut y, &mut dy),
        Duplicated::new(&x, &mut dx),
    );
    match r {
        Ok(()) => assert_eq!(dx, [1.0; 3]),
        Err(e) => {
            let t = e.to_string();
            assert!(
                !t.contains("give each reverse the tape of its own augmented primal"),
                "the message blames the caller: {t}"
            );
        }
    }
}

static CALLS: AtomicUsize = AtomicUsize::new(0);

/// Every third call skips the last element.
#[derivative_rule(copy)]
pub fn every_third_call_short(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    let c = CALLS.fetch_add(1, Ordering::SeqCst);
    let n = dst.len() - usize::from(c % 3 == 2);
    dst[..n].copy_from_slice(&src[..n]);
}

/// Checked mode, promise "nothing else is written (no shadow work, no tape)" / "an Err changes
/// nothing": a width-2 forward whose lane-1 call through the primitive disagrees returns
/// `PrimalDisagrees` (lane 1) with lane 0's `d_dst` already overwritten (7 → 2) and lane 1's
/// partly written.
#[test]
#[ignore = "reproducer: fails until fixed"]
fn a_lane_violation_leaves_every_shadow_as_it_was() {
    if !cfg!(feature = "checked") {
        return;
    }
    CALLS.store(0, Ordering::SeqCst);
    let x = vec![1.0f32; 4];
    let mut y = vec![0.0f32; 4];
    let (mut a, mut b) = (vec![7.0f32; 4], vec![7.0f32; 4]);
    let (mut c, mut d) = (vec![2.0f32; 4], vec![3.0f32; 4]);
    let r = every_third_call_short_rule().forward(
        Duplicated::batch(&mut y[..], [&mut a[..], &mut b[..]]),
        Duplicated::batch(&x[..], [&mut c[..], &mut d[..]]),
    );
    assert!(matches!(r, Err(Error::PrimalDisagrees(_))), "{r:?}");
    assert_eq!(
        a, [7.0; 4],
        "lane 0's d_dst was written before lane 1's violation"
    );
    assert_eq!(b, [7.0; 4], "lane 1's d_dst was written");
}

#[allow(dead_code)]
fn _uses(_: CheckError) {}
