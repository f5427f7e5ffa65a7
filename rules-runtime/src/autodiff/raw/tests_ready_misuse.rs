//! What safe code, and Enzyme on safe code, can make the ready-made bridged copies
//! (`autodiff::copies`) do, against the promises of docs/autodiff.md ("The ready-made copies")
//! and docs/soundness.md: bad input is a typed error recorded for `take_error` that changes
//! nothing (every side checked before the first write), lengths equal as cudarc asks, boxes never
//! touch padding, the handles of one pair only, a self-copy is the identity, errors stay on their
//! thread, the symbols carry the crate's version.
//!
//! The safe `copies::*` functions run the primal bridge (outside Enzyme); the other bridges are
//! called as Enzyme calls them for `df(.., primal, shadow, ..)`: each argument followed by its
//! shadow slot, the primal itself in the slot of an inactive argument. Host tests use pageable
//! pairs (`AdPair::new_host`); the GPU ones (`--ignored gpu_ready_misuse_`, in
//! `tests_ready_misuse_gpu.rs`) every other kind. Here: the handles and the lengths; the boxes,
//! tapes and activities are in `tests_ready_misuse_boxes.rs`.
use super::ready::for_f32 as b;
use super::tapes::aug_ok;
use crate::Error;
use crate::autodiff::{AdBuf, AdError, AdPair, copies, take_error};

/// The first recorded error (with how many were recorded), as text; empty when none.
pub(super) fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

/// The first recorded error itself; panics when none was recorded.
pub(super) fn error() -> AdError {
    take_error().expect("an error was recorded").0.error
}

/// Held: two empty slices at one address (`split_at_mut(0)`) make a pair whose shadow handle
/// has the address of another pair's shadow, with length 0. Swapped into the other pair (the
/// `&mut AdBuf` of `split`), it passes the shadow check (addresses only) and the rule would
/// write the other pair's length through a pointer borrowed for 0 elements (UB under Miri's
/// borrow models, whatever the memory holds): refused, nothing written.
#[test]
fn ready_misuse_an_empty_pairs_shadow_at_the_same_address_is_refused() {
    let (mut v, mut dv) = (vec![0.0f32; 4], vec![7.0f32; 4]);
    let mut x = [1.0f32, 2.0, 3.0, 4.0];
    let mut dx = [0.5f32; 4];
    {
        let (v0, v4) = v.split_at_mut(0);
        let (dv0, dv4) = dv.split_at_mut(0);
        let mut empty = AdPair::new_host(v0, dv0).unwrap();
        let mut full = AdPair::new_host(v4, dv4).unwrap();
        core::mem::swap(empty.split().1, full.split().1);
        let (y, dy) = full.split();
        // SAFETY: live handles, `x`, `dx` of 4 elements: what Enzyme passes for
        // `df(&x, &mut dx, y, dy)` with `dy` the swapped-in handle.
        unsafe { b::htod_aug(y, dy, x.as_mut_ptr(), dx.as_mut_ptr(), 4, 4) };
        if aug_ok() {
            // The rule took the 0-element shadow for 4: its reverse writes through it.
            unsafe { b::htod_rev(y, dy, x.as_mut_ptr(), dx.as_mut_ptr(), 4, 4) };
            panic!("accepted: {}", error_text());
        }
        let e = error_text();
        assert!(e.contains("not this buffer's shadow"), "{e}");
        // And every other bridge, on the same handles.
        unsafe { b::zeros_aug(y, dy) };
        assert!(!aug_ok());
        assert!(error_text().contains("not this buffer's shadow"));
        unsafe { b::htod_fwd(y, dy, x.as_mut_ptr(), dx.as_mut_ptr(), 4, 4) };
        assert!(error_text().contains("not this buffer's shadow"));
    }
    assert_eq!((v, dv), (vec![0.0; 4], vec![7.0; 4]), "nothing written");
    assert_eq!(dx, [0.5; 4]);
}

/// Held: the same handle on both sides is the identity: the safe call changes nothing, and in
/// reverse mode the derivative passes through unchanged (`x ← x`: `dx` stays), never doubled
/// or zeroed. The same for a box of one handle onto itself with the same layout.
#[test]
fn ready_misuse_a_handle_copied_onto_itself_is_the_identity() {
    let (mut a, mut da) = (vec![1.0f32, 2.0, 3.0, 4.0], vec![0.5f32, 1.5, 2.5, 3.5]);
    {
        let mut p = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let (x, dx) = p.split();
        copies::memcpy(x, x);
        copies::memcpy_2d(x, 8, x, 8, (2, 2));
        copies::memcpy_3d(x, (4, 1), x, (4, 1), (1, 1, 4));
        assert_eq!(error_text(), "");
        let dxp: *const AdBuf<f32> = dx;
        // SAFETY: live handles of one pair, both sides the same argument (Enzyme passes each
        // argument's own shadow).
        unsafe { b::memcpy_aug(x, dxp, x, dxp) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dxp, x, dxp) };
        unsafe { b::box3_aug(x, dxp, 8, 8, 2, 2, x, dxp, 8, 8, 2, 2, 2, 2, 2, 2, 1, 1) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::box3_rev(x, dxp, 8, 8, 2, 2, x, dxp, 8, 8, 2, 2, 2, 2, 2, 2, 1, 1) };
        unsafe { b::memcpy_fwd(x, dxp, x, dxp) };
        assert_eq!(error_text(), "");
    }
    assert_eq!(a, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(da, [0.5, 1.5, 2.5, 3.5], "x ← x passes dx through");
}

/// Held: a shadow handle where a primal belongs (a primal and its own shadow, in either place,
/// through every safe function) is refused and changes nothing.
#[test]
fn ready_misuse_a_primal_and_its_own_shadow_are_refused_everywhere() {
    let (mut a, mut da) = (vec![1.0f32, 2.0, 3.0], vec![4.0f32, 5.0, 6.0]);
    let mut h = [9.0f32; 3];
    {
        let mut p = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let (x, dx) = p.split();
        let dx: &AdBuf<f32> = dx;
        type Call<'c> = (&'c str, &'c dyn Fn(&mut [f32; 3]));
        let calls: [Call; 10] = [
            ("memcpy(x, dx)", &|_| copies::memcpy(x, dx)),
            ("memcpy(dx, x)", &|_| copies::memcpy(dx, x)),
            ("memcpy(dx, dx)", &|_| copies::memcpy(dx, dx)),
            ("memset_zeros(dx)", &|_| copies::memset_zeros(dx)),
            ("memcpy_htod(dx, h)", &|h| copies::memcpy_htod(dx, &h[..])),
            ("memcpy_dtoh(h, dx)", &|h| {
                copies::memcpy_dtoh(&mut h[..], dx)
            }),
            ("memcpy_2d(x, dx)", &|_| {
                copies::memcpy_2d(x, 4, dx, 4, (1, 3))
            }),
            ("memcpy_2d(dx, x)", &|_| {
                copies::memcpy_2d(dx, 4, x, 4, (1, 3))
            }),
            ("memcpy_3d_htod(dx, h)", &|h| {
                copies::memcpy_3d_htod(dx, (4, 1), &h[..], (4, 1), (1, 1, 3))
            }),
            ("memcpy_3d_dtoh(h, dx)", &|h| {
                copies::memcpy_3d_dtoh(&mut h[..], (4, 1), dx, (4, 1), (1, 1, 3))
            }),
        ];
        for (what, call) in calls {
            call(&mut h);
            let e = error_text();
            assert!(
                e.starts_with("1: ") && e.contains("shadow handle"),
                "{what}: {e}"
            );
        }
    }
    assert_eq!((a, da), (vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]));
    assert_eq!(h, [9.0; 3]);
}

/// Held: shadow handles swapped between two pairs are refused by every bridge, in every mode.
#[test]
fn ready_misuse_swapped_shadows_are_refused_in_every_mode() {
    let (mut a, mut da) = (vec![1.0f32; 3], vec![2.0f32; 3]);
    let (mut c, mut dc) = (vec![3.0f32; 3], vec![4.0f32; 3]);
    {
        let mut pa = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let mut pc = AdPair::new_host(&mut c[..], &mut dc[..]).unwrap();
        core::mem::swap(pa.split().1, pc.split().1);
        let (x, dx) = pa.split();
        let dx: *const AdBuf<f32> = dx;
        let (y, dy) = pc.split();
        let dy: *const AdBuf<f32> = dy;
        // SAFETY (each call): live handles, as Enzyme passes them.
        unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(!aug_ok());
        assert!(error_text().contains("not this buffer's shadow"));
        unsafe { b::memcpy_fwd(x, dx, y, dy) };
        assert!(error_text().contains("not this buffer's shadow"));
        // Each pair's own shadow back in its place: accepted (the swap is only refused where
        // it mismatches); its reverse consumes the tape.
        unsafe { b::memcpy_aug(x, dy, y, dx) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dy, y, dx) };
        assert_eq!(error_text(), "");
        unsafe { b::zeros_aug(x, dx) };
        assert!(!aug_ok());
        assert!(error_text().contains("not this buffer's shadow"));
    }
    // Only the accepted call wrote: a ← c, dc += da, da ← 0.
    assert_eq!(
        (a, da, c, dc),
        (vec![3.0; 3], vec![0.0; 3], vec![3.0; 3], vec![6.0; 3])
    );
}

/// Held: a copy's two sides have equal lengths (cudarc's rule), in both directions and both
/// bridge kinds; nothing is written.
#[test]
fn ready_misuse_unequal_lengths_are_refused() {
    let (mut a, mut da) = (vec![1.0f32; 3], vec![2.0f32; 3]);
    let (mut c, mut dc) = (vec![3.0f32; 4], vec![4.0f32; 4]);
    let mut h4 = [5.0f32; 4];
    let mut h2 = [6.0f32; 2];
    {
        let mut pa = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let mut pc = AdPair::new_host(&mut c[..], &mut dc[..]).unwrap();
        let (x, dx) = pa.split();
        let (y, dy) = pc.split();
        let length_mismatch = |k| {
            let e = error();
            assert!(
                matches!(e, AdError::Rule(Error::LengthMismatch { .. })),
                "call {k}: {e}"
            );
        };
        copies::memcpy(x, y);
        length_mismatch(0);
        copies::memcpy(y, x);
        length_mismatch(1);
        copies::memcpy_htod(x, &h4[..]);
        length_mismatch(2);
        copies::memcpy_htod(y, &h2[..]);
        length_mismatch(3);
        copies::memcpy_dtoh(&mut h4[..], x);
        length_mismatch(4);
        copies::memcpy_dtoh(&mut h2[..], y);
        length_mismatch(5);
        let (dx, dy): (*const AdBuf<f32>, *const AdBuf<f32>) = (dx, dy);
        // SAFETY (each call): live handles of two pairs; `h4`, `h2` as their lengths say.
        unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(!aug_ok());
        assert!(matches!(
            error(),
            AdError::Rule(Error::LengthMismatch { .. })
        ));
        unsafe { b::dtoh_aug(h2.as_mut_ptr(), h4.as_mut_ptr(), 2, 2, y, dy) };
        assert!(!aug_ok());
        assert!(matches!(
            error(),
            AdError::Rule(Error::LengthMismatch { .. })
        ));
    }
    assert_eq!((a, da), (vec![1.0; 3], vec![2.0; 3]));
    assert_eq!((c, dc), (vec![3.0; 4], vec![4.0; 4]));
    assert_eq!((h4, h2), ([5.0; 4], [6.0; 2]));
}

/// Held: empty buffers copy nothing without an error; an empty side against a non-empty one is
/// a length mismatch.
#[test]
fn ready_misuse_empty_buffers() {
    let (mut e, mut de) = (Vec::<f32>::new(), Vec::<f32>::new());
    let (mut f, mut df) = (Vec::<f32>::new(), Vec::<f32>::new());
    let (mut a, mut da) = (vec![1.0f32; 3], vec![2.0f32; 3]);
    {
        let mut pe = AdPair::new_host(&mut e, &mut de).unwrap();
        let mut pf = AdPair::new_host(&mut f, &mut df).unwrap();
        let mut pa = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let (x, dx) = pe.split();
        let dx: *const AdBuf<f32> = dx;
        let (y, dy) = pf.split();
        let dy: *const AdBuf<f32> = dy;
        let (z, _) = pa.split();
        copies::memcpy(x, y);
        copies::memset_zeros(x);
        copies::memcpy_htod(x, &[]);
        copies::memcpy_dtoh(&mut [], x);
        copies::memcpy_2d(x, 0, y, 0, (0, 0));
        copies::memcpy_3d(x, (0, 0), y, (0, 0), (0, 0, 0));
        assert_eq!(error_text(), "");
        // SAFETY: live handles of two empty pairs.
        unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dx, y, dy) };
        assert_eq!(error_text(), "");
        let length_mismatch = |k| {
            let e = error();
            assert!(
                matches!(e, AdError::Rule(Error::LengthMismatch { .. })),
                "call {k}: {e}"
            );
        };
        copies::memcpy(z, x);
        length_mismatch(0);
        copies::memcpy(x, z);
        length_mismatch(1);
        copies::memcpy_htod(z, &[]);
        length_mismatch(2);
    }
    assert_eq!((a, da), (vec![1.0; 3], vec![2.0; 3]));
}
