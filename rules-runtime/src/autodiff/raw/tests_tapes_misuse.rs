//! The tapes' stack (`tapes`) against callers that do not keep Enzyme's order: a reverse without
//! its augmented primal, twice, out of order, of another element type or another rule with the
//! same parameters, from inside a rule, and entries left until their thread ends. Each reverse
//! that finds no entry of its own on top is refused with `TapeOrder` and writes nothing; the
//! bridges are called as Enzyme calls them (each argument followed by its shadow slot).
use super::ready::{for_f32 as b, for_f64};
use super::tapes::{aug_ok, saved_len};
use crate::autodiff::{AdBuf, AdError, AdPair, pending_tapes, take_error};

fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

/// The only error since the last call.
fn error() -> AdError {
    let (e, n) = take_error().expect("an error");
    assert_eq!(n, 1, "one error: {e}");
    e.error
}

/// A host copy, and a second one with the same parameters (another rule, another bridge).
#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate, autodiff)]
unsafe fn tp_one(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate, autodiff)]
unsafe fn tp_two(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// A host copy with `restore`: its tape holds the destination's old contents, so two calls with
/// the same arguments have different tapes.
#[rules_macro::derivative_rule(copy, dst = host, src = host, restore, crate = crate, autodiff)]
unsafe fn tp_restore(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// A copy whose primitive panics.
#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate, autodiff)]
unsafe fn tp_panics(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    let _ = (dst, src);
    panic!("the primitive panicked at n = {n}");
}

/// A fill by value: the value is no part of the arguments its augmented primal keeps.
#[rules_macro::derivative_rule(fill, dst = host, crate = crate, autodiff)]
unsafe fn tp_fill(#[dst] dst: *mut f32, #[dst_offset] at: usize, #[len] n: usize, #[value] v: f32) {
    for i in 0..n {
        // SAFETY: the rule's contract.
        unsafe { dst.add(at + i).write(v) }
    }
}

/// A copy whose primitive calls other bridges while it runs: `tp_one`'s augmented primal and
/// reverse, and reads the stack's length (re-entrancy into the stack from inside a bridge).
#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate, autodiff)]
unsafe fn tp_reenter(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    let (mut p, mut d) = ([0.0f32; 1], [0.0f32; 1]);
    let (mut q, mut e) = ([0.0f32; 1], [0.0f32; 1]);
    let before = pending_tapes();
    // SAFETY: arrays of one element and their shadows.
    unsafe {
        rules_ad_tp_one_f32_aug(
            p.as_mut_ptr(),
            d.as_mut_ptr(),
            1,
            1,
            q.as_mut_ptr(),
            e.as_mut_ptr(),
            1,
            1,
            1,
            1,
        );
        assert_eq!(pending_tapes(), before + 1);
        rules_ad_tp_one_f32_rev(
            p.as_mut_ptr(),
            d.as_mut_ptr(),
            1,
            1,
            q.as_mut_ptr(),
            e.as_mut_ptr(),
            1,
            1,
            1,
            1,
        );
        assert_eq!(pending_tapes(), before);
        core::ptr::copy_nonoverlapping(src, dst, n)
    }
}

/// Held: a reverse with no augmented primal of its own, and a second reverse of one call, find
/// no entry of theirs: each is refused and writes nothing, and the stack is left as it was.
#[test]
fn a_reverse_without_its_augmented_primal_or_run_twice_is_refused() {
    let (mut a, mut da) = (vec![0.0f32; 3], vec![0.0f32; 3]);
    let mut pair = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let (dev, ddev) = pair.split();
    let (mut h, mut dh) = ([0.0f32; 3], [1.0f32; 3]);
    let before = saved_len();
    // SAFETY (each call): live handles of one pair; arrays of 3 and their shadows.
    unsafe { b::dtoh_rev(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    assert!(matches!(error(), AdError::TapeOrder));
    assert_eq!(dh, [1.0; 3], "nothing consumed");
    unsafe { b::dtoh_aug(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    assert!(aug_ok(), "{}", error_text());
    unsafe { b::dtoh_rev(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    assert_eq!(error_text(), "");
    assert_eq!(dh, [0.0; 3]);
    dh = [2.0; 3];
    unsafe { b::dtoh_rev(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    assert!(matches!(error(), AdError::TapeOrder));
    assert_eq!(dh, [2.0; 3], "the second reverse wrote nothing");
    assert_eq!(saved_len(), before);
    drop(pair);
    assert_eq!(da, [1.0; 3], "one reverse's cotangent, not two");
}

/// Held: a reverse called before the reverse of a later augmented primal is refused and leaves
/// both entries; the reverses in Enzyme's order then take their own.
#[test]
fn a_reverse_out_of_order_is_refused_and_the_order_can_still_be_kept() {
    // The pair's shadow seeded, so that an `htod` reverse that ran would move it into dx.
    let (mut a, mut da) = (vec![0.0f32; 3], vec![5.0f32, 0.0, 0.0]);
    let mut pair = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let (dev, ddev) = pair.split();
    let (mut x, mut dx) = ([1.0f32, 2.0, 3.0], [0.0f32; 3]);
    let (mut h, mut dh) = ([0.0f32; 3], [0.0f32; 3]);
    let before = saved_len();
    // SAFETY (each call): live handles of one pair; arrays of 3 and their shadows.
    unsafe { b::htod_aug(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert!(aug_ok(), "{}", error_text());
    unsafe { b::dtoh_aug(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    assert!(aug_ok(), "{}", error_text());
    dh = [1.0, 2.0, 3.0];
    unsafe { b::htod_rev(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert!(matches!(error(), AdError::TapeOrder));
    assert_eq!(dx, [0.0; 3], "the refused reverse wrote nothing");
    assert_eq!(saved_len(), before + 2);
    unsafe { b::dtoh_rev(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    unsafe { b::htod_rev(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert_eq!(error_text(), "");
    assert_eq!(saved_len(), before);
    assert_eq!(dx, [6.0, 2.0, 3.0]);
}

/// Held: the bridges of two element types have the same C arguments; the f64 reverse given the
/// f32 call's pointers finds the f32 bridge's entry on top, not its own, and is refused before
/// it reads a handle (as an `AdBuf<f64>`). The f32 reverse then takes it.
#[test]
fn another_element_types_reverse_takes_no_tape() {
    let (mut a, mut da) = (vec![1.0f32; 3], vec![0.0f32; 3]);
    let (mut c, mut dc) = (vec![2.0f32; 3], vec![0.0f32; 3]);
    let mut pa = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let mut pc = AdPair::new_host(&mut c[..], &mut dc[..]).unwrap();
    let (x, dx) = pa.split();
    let (x, dx): (*const AdBuf<f32>, *const AdBuf<f32>) = (x, dx);
    let (y, dy) = pc.split();
    let (y, dy): (*const AdBuf<f32>, *const AdBuf<f32>) = (y, dy);
    let before = saved_len();
    // SAFETY: live handles of two pairs.
    unsafe { b::memcpy_aug(x, dx, y, dy) };
    assert!(aug_ok(), "{}", error_text());
    // SAFETY: the misuse under test: the same pointers as f64 handles. Refused on the stack's
    // entry, before any handle is read.
    unsafe { for_f64::memcpy_rev(x.cast(), dx.cast(), y.cast(), dy.cast()) };
    assert!(matches!(error(), AdError::TapeOrder));
    assert_eq!(saved_len(), before + 1);
    // SAFETY: as the augmented primal's.
    unsafe { b::memcpy_rev(x, dx, y, dy) };
    assert_eq!(error_text(), "");
    assert_eq!(saved_len(), before);
}

/// Held: two generated rules with the same parameters (the same C signature) keep their own
/// entries: the one's reverse does not take the other's tape, even for the same pointers.
#[test]
fn two_rules_with_the_same_parameters_keep_their_own_tapes() {
    let (mut x, mut dx) = ([1.0f32, 2.0], [0.0f32; 2]);
    let (mut y, mut dy) = ([0.0f32; 2], [0.0f32; 2]);
    let before = saved_len();
    // SAFETY (each call): arrays of 2 and their shadows.
    unsafe {
        rules_ad_tp_one_f32_aug(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    assert_eq!(error_text(), "");
    assert_eq!(y, [1.0, 2.0]);
    dy = [3.0, 4.0];
    unsafe {
        rules_ad_tp_two_f32_rev(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    assert!(matches!(error(), AdError::TapeOrder));
    assert_eq!((dx, dy), ([0.0; 2], [3.0, 4.0]), "nothing written");
    unsafe {
        rules_ad_tp_one_f32_rev(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    assert_eq!(error_text(), "");
    assert_eq!((dx, dy), ([3.0, 4.0], [0.0; 2]));
    assert_eq!(saved_len(), before);
}

/// Held: a fill's value is not among the arguments its entry is matched on, so a NaN value
/// (which equals nothing, itself included) still finds its entry, and the reverse returns
/// `d_v = Σ d_dst`.
#[test]
fn a_fill_of_nan_finds_its_entry() {
    let (mut y, mut dy) = ([1.0f32; 4], [0.0f32; 4]);
    let before = saved_len();
    // SAFETY (each call): arrays of 4 and their shadows; the box [1, 3) lies in them.
    unsafe {
        rules_ad_tp_fill_f32_aug(y.as_mut_ptr(), dy.as_mut_ptr(), 4, 4, 1, 1, 2, 2, f32::NAN)
    };
    assert_eq!(error_text(), "");
    assert!(y[1].is_nan() && y[2].is_nan());
    dy = [1.0, 2.0, 3.0, 4.0];
    let dv = unsafe {
        rules_ad_tp_fill_f32_rev(y.as_mut_ptr(), dy.as_mut_ptr(), 4, 4, 1, 1, 2, 2, f32::NAN)
    };
    assert_eq!(error_text(), "");
    assert_eq!(dv, 5.0);
    assert_eq!(dy, [1.0, 0.0, 0.0, 4.0]);
    assert_eq!(saved_len(), before);
}

/// Held: a rule that panics in its augmented primal records the panic and keeps an entry without
/// a tape; its reverse takes that entry (`NoTape`), so nothing is left behind.
#[test]
fn a_rule_that_panics_leaves_no_entry_behind() {
    let (mut x, mut dx) = ([1.0f32; 2], [0.0f32; 2]);
    let (mut y, mut dy) = ([0.0f32; 2], [0.0f32; 2]);
    let before = saved_len();
    // SAFETY (each call): arrays of 2 and their shadows.
    unsafe {
        rules_ad_tp_panics_f32_aug(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    assert!(matches!(error(), AdError::Panic(_)));
    assert_eq!(saved_len(), before + 1);
    dy = [1.0; 2];
    unsafe {
        rules_ad_tp_panics_f32_rev(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    assert!(matches!(error(), AdError::NoTape));
    assert_eq!((dx, dy), ([0.0; 2], [1.0; 2]), "nothing written");
    assert_eq!(saved_len(), before);
}

/// Held: a rule whose primitive runs other bridges (an augmented primal and its reverse) and
/// reads the stack while its own bridge runs: no borrow of the stack is held across a rule, so
/// nothing panics at the `extern "C"` edge (which would abort); the inner reverse takes the inner
/// entry (a `NoTape`: the inner augmented primal was refused as called from inside a bridge),
/// the outer reverse its own.
#[test]
fn a_rule_calling_bridges_from_inside_its_bridge_keeps_the_stack() {
    let (mut x, mut dx) = ([1.0f32, 2.0], [0.0f32; 2]);
    let (mut y, mut dy) = ([0.0f32; 2], [0.0f32; 2]);
    let before = saved_len();
    // SAFETY (each call): arrays of 2 and their shadows.
    unsafe {
        rules_ad_tp_reenter_f32_aug(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    let (first, n) = take_error().expect("the inner bridges' errors");
    assert!(
        first
            .to_string()
            .contains("called from inside another bridge's rule"),
        "{first}"
    );
    assert_eq!(
        n, 2,
        "the inner augmented primal's refusal and its reverse's NoTape"
    );
    assert_eq!(y, [1.0, 2.0], "the outer copy ran");
    assert_eq!(saved_len(), before + 1);
    dy = [3.0, 4.0];
    unsafe {
        rules_ad_tp_reenter_f32_rev(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    assert_eq!(error_text(), "");
    assert_eq!(dx, [3.0, 4.0]);
    assert_eq!(saved_len(), before);
}

/// Limit (by design, not refused): two calls of one bridge with the same arguments and shadow
/// slots have entries the stack cannot tell apart. In Enzyme's order (every augmented primal's
/// reverse, in reverse order) the top one is always the right one. A caller that skips the
/// reverse of the later call hands its tape to the earlier call's reverse, which runs without an
/// error: here a copy with `restore` writes back the contents the later call saved, not the
/// earlier call's. `pending_tapes()` is the only sign: one entry left.
#[test]
fn limit_a_skipped_reverse_hands_its_tape_to_the_reverse_of_an_equal_call() {
    let (mut x, mut dx) = ([1.0f32, 2.0], [0.0f32; 2]);
    let (mut y, mut dy) = ([7.0f32, 8.0], [0.0f32; 2]);
    let before = pending_tapes();
    // SAFETY (each call): arrays of 2 and their shadows.
    unsafe {
        rules_ad_tp_restore_f32_aug(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    x = [3.0, 4.0];
    unsafe {
        rules_ad_tp_restore_f32_aug(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    assert_eq!(error_text(), "");
    assert_eq!(y, [3.0, 4.0]);
    // The reverse of the first call only.
    unsafe {
        rules_ad_tp_restore_f32_rev(
            y.as_mut_ptr(),
            dy.as_mut_ptr(),
            2,
            2,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            2,
            2,
            2,
            2,
        )
    };
    assert_eq!(error_text(), "", "no error");
    assert_eq!(y, [1.0, 2.0], "the later call's saved contents, not [7, 8]");
    assert_eq!(pending_tapes(), before + 1);
}

/// Held: entries whose reverse never ran are dropped with their tapes when their thread ends;
/// the thread ends normally.
#[test]
fn entries_left_when_a_thread_ends_are_dropped_there() {
    std::thread::spawn(|| {
        let (mut x, mut dx) = ([1.0f32; 2], [0.0f32; 2]);
        let (mut y, mut dy) = ([7.0f32, 8.0], [0.0f32; 2]);
        // SAFETY: arrays of 2 and their shadows.
        unsafe {
            rules_ad_tp_restore_f32_aug(
                y.as_mut_ptr(),
                dy.as_mut_ptr(),
                2,
                2,
                x.as_mut_ptr(),
                dx.as_mut_ptr(),
                2,
                2,
                2,
                2,
            )
        };
        assert_eq!(error_text(), "");
        assert_eq!(pending_tapes(), 1);
    })
    .join()
    .unwrap();
}
