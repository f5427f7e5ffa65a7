//! The region, memset and fill bridges on host memory: boxes checked against each side before
//! anything runs, padding untouched, the value's derivative returned by the fill's reverse.
use super::*;
use crate::autodiff::take_error;

/// A 2D copy of `h` rows of `w` elements, rows `dp` / `sp` bytes apart.
#[rules_macro::derivative_rule(copy2d, dst = host, src = host, crate = crate)]
unsafe fn rows(
    #[dst] dst: *mut f32,
    #[dst_pitch] dp: usize,
    #[src] src: *const f32,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) {
    for r in 0..h {
        // SAFETY: the rule's contract.
        unsafe { core::ptr::copy_nonoverlapping(src.add(r * sp / 4), dst.add(r * dp / 4), w) };
    }
}

#[rules_macro::derivative_rule(memset, dst = host, crate = crate)]
unsafe fn set(#[dst] dst: *mut f32, #[dst_offset] at: usize, #[len] n: usize, #[value] bits: u32) {
    for i in 0..n {
        // SAFETY: the rule's contract.
        unsafe { dst.add(at + i).write(f32::from_bits(bits)) }
    }
}

#[rules_macro::derivative_rule(fill, dst = host, crate = crate)]
unsafe fn fill(#[dst] dst: *mut f32, #[dst_offset] at: usize, #[len] n: usize, #[value] v: f32) {
    for i in 0..n {
        // SAFETY: the rule's contract.
        unsafe { dst.add(at + i).write(v) }
    }
}

fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

/// A host slice and its shadow, as a bridge sees them (`inactive`: Enzyme's inactive slot).
fn slice(p: &mut [f32], d: &mut [f32], inactive: bool) -> Side<f32> {
    let (len, p) = (p.len(), p.as_mut_ptr());
    Side::Slice(p, len, if inactive { p } else { d.as_mut_ptr() })
}

/// 2 rows of 2 elements: `x` in rows of 3 (12 bytes), `y` in rows of 4 (16 bytes).
const X: [f32; 6] = [1.0, 2.0, 9.0, 3.0, 4.0, 9.0];

#[test]
fn a_pitched_copy_moves_the_box_cotangent_and_leaves_padding_alone() {
    let (mut x, mut dx) = (X, [0.0f32; 6]);
    let (mut y, mut dy) = ([-1.0f32; 8], [0.0f32; 8]);
    let make = |_| Ok(Region(rows_rule(16, 12, 2, 2)));
    // SAFETY: live arrays; each box lies in its array (checked again by the bridge).
    let tape = unsafe {
        bridge_aug(
            "r",
            make,
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, false),
        )
    };
    assert!(tape.is_some(), "{}", error_text());
    assert_eq!(y, [1.0, 2.0, -1.0, -1.0, 3.0, 4.0, -1.0, -1.0]);
    dy = [1.0, 2.0, 7.0, 7.0, 3.0, 4.0, 7.0, 7.0];
    // SAFETY: as above, and the tape of that call.
    unsafe {
        bridge_rev(
            "r",
            make,
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, false),
            tape,
        )
    };
    assert_eq!(error_text(), "");
    assert_eq!(dx, [1.0, 2.0, 0.0, 3.0, 4.0, 0.0]);
    // The box's cotangent consumed, the padding's untouched.
    assert_eq!(dy, [0.0, 0.0, 7.0, 7.0, 0.0, 0.0, 7.0, 7.0]);
}

#[test]
fn a_box_beyond_its_side_is_refused_before_anything_runs() {
    let (mut x, mut dx) = (X, [0.0f32; 6]);
    let (mut y, mut dy) = ([-1.0f32; 7], [0.0f32; 7]);
    // The destination's second row starts at element 4 and ends at 6: 7 elements needed, but
    // with a third row (height 3) the source box reaches 2·3 + 2 = 8 > 6.
    let make = |_| Ok(Region(rows_rule(16, 12, 2, 3)));
    // SAFETY: live arrays; the bridge refuses the boxes before using the pointers.
    let tape = unsafe {
        bridge_aug(
            "r",
            make,
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, false),
        )
    };
    assert!(tape.is_none());
    let text = error_text();
    assert!(text.contains("r (augmented primal): bad region for dst: the box reaches element 10 but the buffer holds 7"), "{text}");
    assert_eq!(y, [-1.0; 7], "nothing copied");
}

#[test]
fn a_memset_has_no_source_and_zeroes_its_cotangent() {
    let (mut y, mut dy) = ([1.0f32, 2.0, 3.0], [5.0f32; 3]);
    let make = |_| Ok(Memset(set_rule(1, 2, 0)));
    // SAFETY: a live array; `Absent` is never read.
    let tape = unsafe { bridge_aug("m", make, slice(&mut y, &mut dy, false), Side::Absent) };
    assert!(tape.is_some(), "{}", error_text());
    assert_eq!(y, [1.0, 0.0, 0.0]);
    // SAFETY: as above, and the tape of that call.
    unsafe { bridge_rev("m", make, slice(&mut y, &mut dy, false), Side::Absent, tape) };
    assert_eq!(error_text(), "");
    assert_eq!(dy, [5.0, 0.0, 0.0]);
    // Outside differentiation: the memset, with its box checked.
    let mut z = [1.0f32; 2];
    // SAFETY: a live array (too short: refused).
    unsafe {
        bridge_primal(
            "m",
            |_| Ok(Memset(set_rule(1, 2, 0))),
            slice(&mut z, &mut [], true),
            Side::Absent,
        )
    };
    let text = error_text();
    assert!(
        text.contains(
            "m (primal): bad region for dst: the box reaches element 3 but the buffer holds 2"
        ),
        "{text}"
    );
    assert_eq!(z, [1.0; 2]);
}

#[test]
fn a_fill_returns_the_derivative_of_its_value() {
    let (mut y, mut dy) = ([1.0f32; 4], [0.0f32; 4]);
    let make = |_| Ok(Fill(fill_rule(1, 2)));
    // SAFETY: a live array.
    let tape = unsafe { fill_aug("f", make, slice(&mut y, &mut dy, false), 7.0) };
    assert!(tape.is_some(), "{}", error_text());
    assert_eq!(y, [1.0, 7.0, 7.0, 1.0]);
    dy = [1.0, 2.0, 3.0, 4.0];
    // SAFETY: as above, and the tape of that call.
    let dv = unsafe { fill_rev("f", make, slice(&mut y, &mut dy, false), 7.0, tape) };
    assert_eq!(error_text(), "");
    assert_eq!((dv, dy), (5.0, [1.0, 0.0, 0.0, 4.0]));
    // Forward mode: the tangent reaches the box.
    dy = [9.0; 4];
    // SAFETY: a live array.
    unsafe { fill_fwd("f", make, slice(&mut y, &mut dy, false), (7.0, 0.5)) };
    assert_eq!(error_text(), "");
    assert_eq!(dy, [9.0, 0.5, 0.5, 9.0]);
}

#[test]
fn a_fill_of_an_inactive_destination_has_a_zero_derivative_and_a_failed_one_records() {
    let (mut y, mut dy) = ([1.0f32; 4], [0.0f32; 4]);
    let make = |_| Ok(Fill(fill_rule(1, 2)));
    // SAFETY: a live array; its shadow slot holds the primal (inactive).
    let tape = unsafe { fill_aug("f", make, slice(&mut y, &mut dy, true), 7.0) };
    assert!(tape.is_some(), "{}", error_text());
    // SAFETY: as above, and the tape of that call.
    let dv = unsafe { fill_rev("f", make, slice(&mut y, &mut dy, true), 7.0, tape) };
    assert_eq!((error_text(), dv), (String::new(), 0.0));
    // A reverse whose augmented primal failed: no tape, d_v = 0 and the error recorded.
    // SAFETY: a null tape.
    let dv = unsafe { fill_rev("f", make, slice(&mut y, &mut dy, false), 7.0, None) };
    assert_eq!(dv, 0.0);
    assert!(error_text().contains("f (reverse): no tape"));
}

#[rules_macro::derivative_rule(copy, dst = host, src = host, restore, crate = crate)]
unsafe fn overwrite(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

#[test]
fn a_copy_with_restore_is_bridged_as_a_region_rule_and_restores() {
    let (mut x, mut dx) = ([1.0f32, 2.0], [0.0f32; 2]);
    let (mut y, mut dy) = ([8.0f32, 9.0, 7.0], [0.0f32; 3]);
    let make = |_| Ok(Region(overwrite_rule(2)));
    // SAFETY: live arrays of at least 2 elements.
    let tape = unsafe {
        bridge_aug(
            "o",
            make,
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, false),
        )
    };
    assert!(tape.is_some(), "{}", error_text());
    assert_eq!(y, [1.0, 2.0, 7.0]);
    dy = [3.0, 4.0, 5.0];
    // SAFETY: as above, and the tape of that call.
    unsafe {
        bridge_rev(
            "o",
            make,
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, false),
            tape,
        )
    };
    assert_eq!(error_text(), "");
    // The cotangent moved, and the overwritten elements written back.
    assert_eq!((dx, dy, y), ([3.0, 4.0], [0.0, 0.0, 5.0], [8.0, 9.0, 7.0]));
}

#[test]
fn an_absent_side_is_refused_where_the_rule_has_one() {
    let (mut y, mut dy) = ([0.0f32; 3], [0.0f32; 3]);
    // SAFETY: a live array; the bridge refuses the sides before using any pointer.
    let tape = unsafe {
        bridge_aug(
            "c",
            |_| Ok(Region(overwrite_rule(2))),
            slice(&mut y, &mut dy, false),
            Side::Absent,
        )
    };
    assert!(tape.is_none());
    assert!(
        error_text().contains("the sides do not fit the rule"),
        "a copy without a source"
    );
    let (mut x, mut dx) = ([1.0f32; 3], [0.0f32; 3]);
    // SAFETY: as above.
    let tape = unsafe {
        bridge_aug(
            "m",
            |_| Ok(Memset(set_rule(0, 1, 0))),
            slice(&mut y, &mut dy, false),
            slice(&mut x, &mut dx, false),
        )
    };
    assert!(tape.is_none());
    assert!(
        error_text().contains("the sides do not fit the rule"),
        "a memset with a source"
    );
    assert_eq!(y, [0.0; 3]);
}
