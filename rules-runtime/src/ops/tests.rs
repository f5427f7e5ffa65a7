//! Unit tests of the whole-buffer operations on host memory.

use super::*;
use crate::error::Error;

#[test]
fn host_ops() {
    let mut a = vec![1.0f64, 2.0, 3.0];
    let mut b = vec![10.0f64, 20.0, 30.0];
    accumulate(On::Host, &mut a, &b).unwrap();
    assert_eq!(a, [11.0, 22.0, 33.0]);
    accumulate_and_zero(On::Host, &mut a, &mut b).unwrap();
    assert_eq!(a, [21.0, 42.0, 63.0]);
    assert_eq!(b, [0.0; 3]);
    zero(On::Host, &mut a[1..]).unwrap();
    assert_eq!(a, [21.0, 0.0, 0.0]);
}

#[test]
fn length_mismatch_changes_nothing() {
    let mut a = vec![1.0f32; 3];
    let mut b = vec![2.0f32; 4];
    let e = accumulate_and_zero(On::Host, &mut a, &mut b).unwrap_err();
    assert!(
        matches!(
            e,
            Error::LengthMismatch {
                expected: 3,
                found: 4,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(a, [1.0; 3]);
    assert_eq!(b, [2.0; 4]);
}
