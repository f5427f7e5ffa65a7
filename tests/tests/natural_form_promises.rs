//! Promises that primitives written the natural way once broke, each in both modes:
//!
//! cargo test -p rules-tests --test natural_form_promises
//! cargo test -p rules-tests --features checked --test natural_form_promises
// `&Vec` parameters and `vec!` buffers are the forms users write (some primitives resize their
// `Vec`): the point of these tests, not something to tidy.
#![allow(clippy::ptr_arg, clippy::useless_vec)]

use rules_runtime::Error;
use rules_runtime::prelude::*;
use rules_runtime::testing::{CheckError, Shapes, check_copy};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A "copy" that appends to its `Vec` destination (grows it).
#[derivative_rule(copy)]
pub fn vec_extend(#[dst] dst: &mut Vec<f32>, #[src] src: &Vec<f32>) {
    dst.extend_from_slice(src);
}

/// Errors are typed, nothing panics: a primitive that grows its destination is refused at the
/// call (it was a wrong tangent with no error, and in checked mode a compare that indexed past
/// the source).
#[test]
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

/// The one-call checks never panic on bad input: a shape too large to allocate is a typed error.
#[test]
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

/// A wrong rule never passes: a tolerance that is not a finite non-negative number is refused
/// (a NaN made every comparison pass).
#[test]
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

/// A primitive that reallocates its destination (`*dst = src.clone()`) is refused at the call
/// that did it, with the cause named; the reverse used to refuse it as a `TapeMismatch` that
/// blamed the caller.
#[test]
fn a_reallocating_primitive_is_not_blamed_on_the_caller() {
    let x = vec![1.0f32, 2.0, 3.0];
    let (mut y, mut dy, mut dx) = (vec![0.0f32; 3], vec![0.0f32; 3], vec![0.0f32; 3]);
    let r = vec_assign_rule().augmented_primal(
        Duplicated::new(&mut y, &mut dy),
        Duplicated::new(&x, &mut dx),
    );
    match r {
        Err(Error::Primal(e)) => {
            let t = e.to_string();
            assert!(t.contains("moved or resized its destination `dst`"), "{t}");
            assert!(!t.contains("give each reverse the tape"), "{t}");
        }
        other => panic!("a reallocating primitive: {other:?}"),
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

/// Checked mode: a batched forward whose lane-1 call through the primitive disagrees stops at
/// that call with `PrimalDisagrees` naming lane 1. What the primitive's own calls wrote stays, as
/// with any failure of the primitive (`Error::Primal`): lane 0's tangent (its call agreed) and
/// what lane 1's call wrote; nothing is written after it.
#[test]
fn a_lane_violation_stops_at_that_lane() {
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
    match r {
        Err(Error::PrimalDisagrees(e)) => assert!(e.to_string().contains("lane 1"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(a, [2.0; 4], "lane 0 holds its checked tangent");
    assert_eq!(
        b,
        [3.0, 3.0, 3.0, 7.0],
        "lane 1 holds what its call wrote, and no more"
    );
    assert_eq!(
        (c, d),
        (vec![2.0; 4], vec![3.0; 4]),
        "the sources are untouched"
    );
}

#[allow(dead_code)]
fn _uses(_: CheckError) {}
