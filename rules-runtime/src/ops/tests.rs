//! Unit tests of the whole-buffer operations on host memory.

use super::*;
use crate::error::Error;
use crate::memory::raw::RawShadow;

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

#[test]
fn raw_device_pointer_without_stream_is_refused() {
    let mut v = vec![1.0f32; 4];
    let mut host = vec![0.0f32; 4];
    // The pointer is never dereferenced: the operation is refused first.
    let mut d = unsafe { RawShadow::new(MemoryKind::Device, v.as_mut_ptr(), 0, 4, "d") }.unwrap();
    let e = accumulate_and_zero(On::Host, &mut host, &mut d).unwrap_err();
    assert!(matches!(e, Error::NoStream(_)), "{e}");
    assert_eq!(host, [0.0; 4]);
}

#[test]
fn array_memory_is_refused_before_anything_is_written() {
    let mut v = vec![1.0f32; 4];
    let mut host = vec![0.0f32; 4];
    let mut arr = unsafe { RawShadow::new(MemoryKind::Array, v.as_mut_ptr(), 0, 4, "a") }.unwrap();
    let e = accumulate_and_zero(On::Host, &mut host, &mut arr).unwrap_err();
    assert!(matches!(e, Error::UnsupportedKinds { .. }), "{e}");
    assert_eq!((host, v), (vec![0.0; 4], vec![1.0; 4]));
}

#[test]
fn aliasing_is_identity_or_refused() {
    let mut v = vec![1.0f32, 2.0, 3.0, 4.0];
    let p = v.as_mut_ptr();
    unsafe {
        let mut x = RawShadow::new(MemoryKind::Host, p, 0, 3, "x").unwrap();
        let mut same = RawShadow::new(MemoryKind::Host, p, 0, 3, "same").unwrap();
        accumulate_and_zero(On::Host, &mut x, &mut same).unwrap();
        let mut shifted = RawShadow::new(MemoryKind::Host, p, 1, 3, "shifted").unwrap();
        let e = accumulate_and_zero(On::Host, &mut x, &mut shifted).unwrap_err();
        assert!(matches!(e, Error::PartialOverlap { .. }), "{e}");
        accumulate(On::Host, &mut x, &same).unwrap();
    }
    assert_eq!(v, [2.0, 4.0, 6.0, 4.0]);
}
