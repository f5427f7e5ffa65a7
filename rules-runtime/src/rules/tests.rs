//! The bodies with a source whose shadows are of another type than its primal (on the device: a
//! read-only `&CudaView` with `&mut CudaViewMut` or `&mut CudaSlice` shadows). Here the host
//! stand-in, a `&Vec<f32>` source with `&mut [f32]` shadows (a test-only activity), runs the same
//! generic code: the primitive copies the primals only, the runtime copies the tangents, and the
//! reverse accumulates into the shadows.

use super::{
    Boxes, RuleNames, copy_augmented_primal, copy_forward, copy_reverse, region_augmented_primal,
    region_forward, region_reverse,
};
use crate::activity::{Const, Duplicated, DuplicatedOnly};
use crate::error::Error;
use crate::ops::On;
use crate::region::Pitched;
use core::cell::Cell;

/// The primitive `dst ← src`, counting its calls.
fn copy(calls: &Cell<usize>) -> impl FnMut(&mut [f32], &Vec<f32>) + '_ {
    move |d, s| {
        calls.set(calls.get() + 1);
        d.copy_from_slice(s);
    }
}

#[test]
fn forward_copies_tangents_the_primitive_cannot_take() {
    let x = vec![1.0f32, -2.0, 3.5, 0.25];
    let (mut y, mut dy) = ([9.0f32; 4], [[7.0f32; 4]; 3]);
    let mut dx = [[0.5f32, -0.0, 8.0, -1.5], [1.0; 4], [-3.0, 2.0, 0.0, 1e-30]];
    let expected = dx;
    let calls = Cell::new(0);
    let [a, b, c] = &mut dx;
    let [p, q, r] = &mut dy;
    let dst = Duplicated::batch(&mut y[..], [&mut p[..], &mut q[..], &mut r[..]]);
    let src = Duplicated::batch(&x, [&mut a[..], &mut b[..], &mut c[..]]);
    copy_forward(On::Host, RuleNames::UNNAMED, dst, src, copy(&calls)).unwrap();
    assert_eq!(calls.get(), 1, "the primitive ran on the primals only");
    assert_eq!(y[..], x[..]);
    // Equal values (`==`: the runtime's copy adds into zeros, so a -0.0 arrives as +0.0).
    assert_eq!(dy, expected, "d_dst[k] = d_src[k]");
    assert_eq!(dx, expected, "the source's shadows are only read");

    // A `DuplicatedOnly` destination skips the primal; a `Const` source zeroes the tangent.
    let mut y = [9.0f32; 4];
    let mut dy = [7.0f32; 4];
    let mut dx = [2.0f32; 4];
    let dst = DuplicatedOnly::new(&mut y[..], &mut dy[..]);
    copy_forward(
        On::Host,
        RuleNames::UNNAMED,
        dst,
        Duplicated::new(&x, &mut dx[..]),
        copy(&calls),
    )
    .unwrap();
    assert_eq!((calls.get(), y, dy), (1, [9.0; 4], [2.0; 4]));
    let dst = Duplicated::new(&mut y[..], &mut dy[..]);
    copy_forward(On::Host, RuleNames::UNNAMED, dst, Const(&x), copy(&calls)).unwrap();
    assert_eq!((calls.get(), dy), (2, [0.0; 4]));
}

#[test]
fn reverse_accumulates_into_shadows_of_another_type() {
    let x = vec![1.0f32, 2.0, 3.0];
    let (mut y, mut dy) = ([0.0f32; 3], [[1.0f32, 2.0, 4.0], [0.5, 0.25, 8.0]]);
    let mut dx = [[10.0f32, 20.0, 30.0], [0.0; 3]];
    let calls = Cell::new(0);
    let tape = {
        let [p, q] = &mut dy;
        let [a, b] = &mut dx;
        let dst = Duplicated::batch(&mut y[..], [&mut p[..], &mut q[..]]);
        let src = Duplicated::batch(&x, [&mut a[..], &mut b[..]]);
        copy_augmented_primal(On::Host, RuleNames::UNNAMED, dst, src, copy(&calls)).unwrap()
    };
    assert_eq!((calls.get(), y), (1, [1.0, 2.0, 3.0]));
    let [p, q] = &mut dy;
    let [a, b] = &mut dx;
    let dst = Duplicated::batch(&mut y[..], [&mut p[..], &mut q[..]]);
    let src = Duplicated::batch(&x, [&mut a[..], &mut b[..]]);
    copy_reverse(On::Host, tape, dst, src).unwrap();
    assert_eq!(dx, [[11.0, 22.0, 34.0], [0.5, 0.25, 8.0]], "d_src += d_dst");
    assert_eq!(dy, [[0.0; 3]; 2], "d_dst ← 0");
}

#[test]
fn a_bad_lane_of_another_type_changes_nothing() {
    let x = vec![1.0f32, 2.0, 3.0];
    let (mut y, mut dy) = ([5.0f32; 3], [[7.0f32; 3]; 2]);
    let (mut d0, mut d1) = ([1.0f32; 3], [1.0f32; 2]); // lane 1 is too short
    let calls = Cell::new(0);
    let [p, q] = &mut dy;
    let dst = Duplicated::batch(&mut y[..], [&mut p[..], &mut q[..]]);
    let src = Duplicated::batch(&x, [&mut d0[..], &mut d1[..]]);
    let e = copy_forward(On::Host, RuleNames::UNNAMED, dst, src, copy(&calls)).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    assert_eq!(
        (calls.get(), y, dy),
        (0, [5.0; 3], [[7.0; 3]; 2]),
        "nothing written"
    );
}

/// A 2 × 2 box with a pitch of 3 elements on both sides: the padding (elements 2 and 5 of 6)
/// is never read into the tangent nor written.
#[test]
fn region_rules_copy_and_accumulate_boxes_of_shadows_of_another_type() {
    let r = Pitched::rows(0, 2, 2, 3 * size_of::<f32>());
    let boxes = Boxes::copy(r, r);
    let rows = |d: &mut [f32], s: &Vec<f32>| {
        for i in [0, 1, 3, 4] {
            d[i] = s[i];
        }
    };
    let x = vec![1.0f32, 2.0, -1.0, 3.0, 4.0, -1.0];
    let (mut y, mut dy) = ([0.0f32; 6], [9.0f32; 6]);
    let mut dx = [0.5f32, 0.25, 100.0, 2.0, -8.0, 100.0];
    let dst = Duplicated::new(&mut y[..], &mut dy[..]);
    region_forward(
        On::Host,
        (boxes, RuleNames::UNNAMED),
        dst,
        Duplicated::new(&x, &mut dx[..]),
        rows,
    )
    .unwrap();
    assert_eq!(y, [1.0, 2.0, 0.0, 3.0, 4.0, 0.0]);
    assert_eq!(
        dy,
        [0.5, 0.25, 9.0, 2.0, -8.0, 9.0],
        "the box copied, the padding kept"
    );

    let dst = Duplicated::new(&mut y[..], &mut dy[..]);
    let tape = region_augmented_primal(
        On::Host,
        (boxes, RuleNames::UNNAMED),
        false,
        dst,
        Const(&x),
        rows,
    )
    .unwrap();
    let dst = Duplicated::new(&mut y[..], &mut dy[..]);
    region_reverse(
        On::Host,
        (boxes, false),
        tape,
        dst,
        Duplicated::new(&x, &mut dx[..]),
    )
    .unwrap();
    assert_eq!(
        dx,
        [1.0, 0.5, 100.0, 4.0, -16.0, 100.0],
        "d_src[R] += d_dst[R]"
    );
    assert_eq!(dy, [0.0, 0.0, 9.0, 0.0, 0.0, 9.0], "d_dst[R] ← 0");
}

/// A fill from a one-element value buffer whose shadow is of another type: forward
/// `d_dst[R] ← d_v`, reverse `d_v += Σ_R d_dst`.
#[test]
fn fill_from_a_value_buffer_with_a_shadow_of_another_type() {
    let r = Pitched::linear::<f32>(1, 3);
    let boxes = Boxes::from_value(Some(r));
    let fill = |d: &mut [f32], v: &Vec<f32>| d[1..4].fill(v[0]);
    let v = vec![2.5f32];
    let (mut y, mut dy) = ([0.0f32; 5], [6.0f32; 5]);
    let mut dv = [-0.75f32];
    let dst = Duplicated::new(&mut y[..], &mut dy[..]);
    region_forward(
        On::Host,
        (boxes, RuleNames::UNNAMED),
        dst,
        Duplicated::new(&v, &mut dv[..]),
        fill,
    )
    .unwrap();
    assert_eq!(y, [0.0, 2.5, 2.5, 2.5, 0.0]);
    assert_eq!(dy, [6.0, -0.75, -0.75, -0.75, 6.0]);

    let dst = Duplicated::new(&mut y[..], &mut dy[..]);
    let tape = region_augmented_primal(
        On::Host,
        (boxes, RuleNames::UNNAMED),
        false,
        dst,
        Const(&v),
        fill,
    )
    .unwrap();
    let mut dy = [100.0f32, 1.0, 2.0, 4.0, 100.0];
    let dst = Duplicated::new(&mut y[..], &mut dy[..]);
    region_reverse(
        On::Host,
        (boxes, false),
        tape,
        dst,
        Duplicated::new(&v, &mut dv[..]),
    )
    .unwrap();
    assert_eq!(dv, [6.25], "d_v += Σ_R d_dst");
    assert_eq!(dy, [100.0, 0.0, 0.0, 0.0, 100.0]);
}

#[test]
fn packed_names_unpack_to_their_three_parts_and_anything_else_to_unnamed() {
    // At compile time, as the rule traits read them.
    const NAMES: RuleNames = RuleNames::unpack("upload\0out\0input");
    assert_eq!(
        NAMES,
        RuleNames {
            rule: "upload",
            dst: "out",
            src: "input"
        }
    );
    // A memset has no source: the last part is empty.
    let memset = RuleNames::unpack("zero\0buf\0");
    assert_eq!((memset.rule, memset.dst, memset.src), ("zero", "buf", ""));
    // Names beyond ASCII stay whole.
    let wide = RuleNames::unpack("kopieren_ü\0ziel\0quelle");
    assert_eq!(
        (wide.rule, wide.dst, wide.src),
        ("kopieren_ü", "ziel", "quelle")
    );
    for other in ["", "f", "f\0d", "f\0d\0s\0t", "\0\0\0"] {
        assert_eq!(RuleNames::unpack(other), RuleNames::UNNAMED, "{other:?}");
    }
}
