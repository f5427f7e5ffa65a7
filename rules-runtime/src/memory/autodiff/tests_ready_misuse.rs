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
//! pairs (`AdPair::new_host`); the GPU ones (`--ignored gpu_ready_misuse_`) every other kind.
use super::ready::for_f32 as b;
use crate::Error;
use crate::autodiff::{AdBuf, AdError, AdPair, copies, take_error};
use core::ptr::null_mut;

/// The first recorded error (with how many were recorded), as text; empty when none.
fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

/// The first recorded error itself; panics when none was recorded.
fn error() -> AdError {
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
        let t = unsafe { b::htod_aug(y, dy, x.as_mut_ptr(), dx.as_mut_ptr(), 4, 4) };
        if !t.is_null() {
            // The rule took the 0-element shadow for 4: its reverse writes through it.
            unsafe { b::htod_rev(y, dy, x.as_mut_ptr(), dx.as_mut_ptr(), 4, 4, t) };
            panic!("accepted: {}", error_text());
        }
        let e = error_text();
        assert!(e.contains("not this buffer's shadow"), "{e}");
        // And every other bridge, on the same handles.
        let t = unsafe { b::zeros_aug(y, dy) };
        assert!(t.is_null());
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
        let t = unsafe { b::memcpy_aug(x, dxp, x, dxp) };
        assert!(!t.is_null(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dxp, x, dxp, t) };
        let t = unsafe { b::box3_aug(x, dxp, 8, 8, 2, 2, x, dxp, 8, 8, 2, 2, 2, 2, 2, 2, 1, 1) };
        assert!(!t.is_null(), "{}", error_text());
        unsafe { b::box3_rev(x, dxp, 8, 8, 2, 2, x, dxp, 8, 8, 2, 2, 2, 2, 2, 2, 1, 1, t) };
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
        let t = unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(t.is_null());
        assert!(error_text().contains("not this buffer's shadow"));
        unsafe { b::memcpy_fwd(x, dx, y, dy) };
        assert!(error_text().contains("not this buffer's shadow"));
        // Each pair's own shadow back in its place: accepted (the swap is only refused where
        // it mismatches); its reverse consumes the tape.
        let t = unsafe { b::memcpy_aug(x, dy, y, dx) };
        assert!(!t.is_null(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dy, y, dx, t) };
        assert_eq!(error_text(), "");
        let t = unsafe { b::zeros_aug(x, dx) };
        assert!(t.is_null());
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
        let t = unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(t.is_null());
        assert!(matches!(
            error(),
            AdError::Rule(Error::LengthMismatch { .. })
        ));
        let t = unsafe { b::dtoh_aug(h2.as_mut_ptr(), h4.as_mut_ptr(), 2, 2, y, dy) };
        assert!(t.is_null());
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
        let t = unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(!t.is_null(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dx, y, dy, t) };
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

/// Held: bad boxes are refused before anything is written, whichever side is at fault (the
/// destination's box may be fine while the source's is not: all or nothing), in the primal and
/// in the augmented primal; sizes near `usize::MAX` are refused, never overflow or panic.
#[test]
fn ready_misuse_bad_boxes_change_nothing() {
    let (mut a, mut da) = (vec![1.0f32; 12], vec![2.0f32; 12]);
    let (mut c, mut dc) = (vec![3.0f32; 12], vec![4.0f32; 12]);
    let mut h = [5.0f32; 12];
    let m = usize::MAX;
    {
        let mut pa = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let mut pc = AdPair::new_host(&mut c[..], &mut dc[..]).unwrap();
        let (x, dx) = pa.split();
        let dx: *const AdBuf<f32> = dx;
        let (y, dy) = pc.split();
        let dy: *const AdBuf<f32> = dy;
        // (dst layout, src layout, shape): each bad on one side or in the shape.
        type Case = ((usize, usize), (usize, usize), (usize, usize, usize));
        let cases: &[(&str, Case)] = &[
            ("src pitch not whole elements", ((8, 2), (6, 2), (1, 2, 1))),
            ("dst pitch not whole elements", ((6, 2), (8, 2), (1, 2, 1))),
            ("src pitch shorter than a row", ((16, 3), (4, 3), (2, 3, 1))),
            ("dst pitch 0", ((0, 3), (8, 3), (2, 3, 1))),
            (
                "src slice height below the height",
                ((8, 2), (8, 1), (2, 2, 2)),
            ),
            ("src box past the source", ((8, 6), (16, 6), (2, 6, 1))),
            ("dst box past the destination", ((16, 6), (8, 6), (2, 6, 1))),
            ("width usize::MAX", ((4, 1), (4, 1), (m, 1, 1))),
            ("width usize::MAX, two rows", ((m, 2), (m, 2), (m, 2, 1))),
            ("height usize::MAX", ((4, m), (4, m), (1, m, 1))),
            ("depth usize::MAX", ((4, 1), (4, 1), (1, 1, m))),
            ("pitch usize::MAX", ((m - 3, 2), (4, 2), (1, 2, 1))),
            ("slice height usize::MAX", ((4, m), (4, m), (1, 1, 2))),
            ("all of it", ((m - 3, m), (m - 3, m), (m / 4, m, m))),
        ];
        for (what, (dl, sl, shape)) in cases {
            copies::memcpy_3d(x, *dl, y, *sl, *shape);
            let e = error_text();
            assert!(e.starts_with("1: memcpy_3d (primal)"), "{what}: {e}");
            copies::memcpy_3d_htod(x, *dl, &h[..], *sl, *shape);
            let e = error_text();
            assert!(e.starts_with("1: memcpy_3d_htod (primal)"), "{what}: {e}");
            copies::memcpy_3d_dtoh(&mut h[..], *dl, y, *sl, *shape);
            let e = error_text();
            assert!(e.starts_with("1: memcpy_3d_dtoh (primal)"), "{what}: {e}");
            let ((dp, dr), (sp, sr), (w, hh, d)) = (*dl, *sl, *shape);
            // SAFETY: live handles of two pairs.
            let t = unsafe {
                b::box3_aug(
                    x, dx, dp, dp, dr, dr, y, dy, sp, sp, sr, sr, w, w, hh, hh, d, d,
                )
            };
            assert!(t.is_null(), "{what}");
            let e = error_text();
            assert!(
                e.starts_with("1: memcpy_3d (augmented primal)"),
                "{what}: {e}"
            );
            unsafe {
                b::box3_fwd(
                    x, dx, dp, dp, dr, dr, y, dy, sp, sp, sr, sr, w, w, hh, hh, d, d,
                )
            };
            let e = error_text();
            assert!(e.starts_with("1: memcpy_3d (forward)"), "{what}: {e}");
        }
    }
    assert_eq!((a, da), (vec![1.0; 12], vec![2.0; 12]));
    assert_eq!((c, dc), (vec![3.0; 12], vec![4.0; 12]));
    assert_eq!(h, [5.0; 12]);
}

/// Held: empty boxes (width, height or depth 0, with any pitches that fit) copy nothing and are
/// not errors, on the host as cudarc's copies of nothing are.
#[test]
fn ready_misuse_empty_boxes_copy_nothing() {
    let (mut a, mut da) = (vec![1.0f32; 6], vec![2.0f32; 6]);
    let (mut c, mut dc) = (vec![3.0f32; 6], vec![4.0f32; 6]);
    {
        let mut pa = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let mut pc = AdPair::new_host(&mut c[..], &mut dc[..]).unwrap();
        let (x, dx) = pa.split();
        let dx: *const AdBuf<f32> = dx;
        let (y, dy) = pc.split();
        let dy: *const AdBuf<f32> = dy;
        let mut refused = Vec::new();
        for (dl, sl, shape) in [
            ((8, 3), (8, 3), (0, 3, 1)),
            ((8, 3), (8, 3), (2, 0, 1)),
            ((8, 3), (8, 3), (2, 3, 0)),
            ((4, 6), (4, 6), (0, 6, 1)),
            ((0, 0), (0, 0), (0, 6, 1)),
            ((0, 3), (4, 3), (0, 3, 2)),
        ] {
            copies::memcpy_3d(x, dl, y, sl, shape);
            let e = error_text();
            if !e.is_empty() {
                refused.push(format!("{dl:?} {sl:?} {shape:?}: {e}"));
            }
            let ((dp, dr), (sp, sr), (w, h, d)) = (dl, sl, shape);
            // SAFETY: live handles of two pairs.
            let t = unsafe {
                b::box3_aug(
                    x, dx, dp, dp, dr, dr, y, dy, sp, sp, sr, sr, w, w, h, h, d, d,
                )
            };
            if t.is_null() {
                refused.push(format!("{dl:?} {sl:?} {shape:?}: {}", error_text()));
                continue;
            }
            unsafe {
                b::box3_rev(
                    x, dx, dp, dp, dr, dr, y, dy, sp, sp, sr, sr, w, w, h, h, d, d, t,
                )
            };
            assert_eq!(error_text(), "", "{dl:?} {sl:?} {shape:?}");
        }
        assert!(
            refused.is_empty(),
            "empty boxes refused:\n{}",
            refused.join("\n")
        );
    }
    assert_eq!((a, da), (vec![1.0; 6], vec![2.0; 6]));
    assert_eq!((c, dc), (vec![3.0; 6], vec![4.0; 6]));
}

/// A box of width 0 with `usize::MAX` rows of pitch 0 passes every check (it reaches no
/// element), and returns at once: nothing to copy, in the primal, the augmented primal and the
/// reverse alike.
#[test]
#[cfg_attr(miri, ignore = "waits for a thread with a timeout")]
fn ready_misuse_a_width_0_box_of_usize_max_rows_returns_at_once() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut a, mut da) = (vec![1.0f32; 2], vec![2.0f32; 2]);
        let (mut c, mut dc) = (vec![3.0f32; 2], vec![4.0f32; 2]);
        let mut pa = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let mut pc = AdPair::new_host(&mut c[..], &mut dc[..]).unwrap();
        let (x, _) = pa.split();
        let (y, _) = pc.split();
        copies::memcpy_2d(x, 0, y, 0, (0, usize::MAX));
        let _ = tx.send(error_text());
    });
    let e = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the copy of an empty box returns (it ran for 20 s)");
    assert_eq!(e, "");
}

/// Held: two boxes of one handle that share elements (other pitches) are a partial overlap,
/// refused; nothing written.
#[test]
fn ready_misuse_overlapping_boxes_of_one_handle_are_refused() {
    let (mut a, mut da) = (
        vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        vec![0.5f32; 8],
    );
    {
        let mut p = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let (x, dx) = p.split();
        let dx: *const AdBuf<f32> = dx;
        copies::memcpy_2d(x, 16, x, 8, (2, 2));
        assert!(matches!(
            error(),
            AdError::Rule(Error::PartialOverlap { .. })
        ));
        // SAFETY: live handles of one pair, as Enzyme passes them.
        let t = unsafe { b::box3_aug(x, dx, 16, 16, 2, 2, x, dx, 8, 8, 2, 2, 2, 2, 2, 2, 1, 1) };
        assert!(t.is_null());
        assert!(matches!(
            error(),
            AdError::Rule(Error::PartialOverlap { .. })
        ));
    }
    assert_eq!(a, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    assert_eq!(da, [0.5; 8]);
}

/// Held: a 3D box between pageable pairs reaches its rows only: the padding between rows and
/// between slices, and its derivative, keep their values.
#[test]
fn ready_misuse_3d_box_leaves_row_and_slice_padding() {
    // Source: 2 slices of 3 rows of 2, rows 3 elements apart (12 B), slices 3 rows apart.
    // Destination: rows 4 apart (16 B), slices 4 rows apart (one padding row).
    let mut x: Vec<f32> = (0..18).map(|v| v as f32).collect();
    let mut dx = [0.0f32; 18];
    let (mut y, mut dy) = (vec![-1.0f32; 32], vec![5.0f32; 32]);
    {
        let mut px = AdPair::new_host(&mut x[..], &mut dx[..]).unwrap();
        let mut py = AdPair::new_host(&mut y[..], &mut dy[..]).unwrap();
        let (xs, dxs) = px.split();
        let dxs: *const AdBuf<f32> = dxs;
        let (ys, dys) = py.split();
        let dys: *const AdBuf<f32> = dys;
        // SAFETY: live handles of two pairs.
        let t = unsafe {
            b::box3_aug(
                ys, dys, 16, 16, 4, 4, xs, dxs, 12, 12, 3, 3, 2, 2, 3, 3, 2, 2,
            )
        };
        assert!(!t.is_null(), "{}", error_text());
        unsafe {
            b::box3_rev(
                ys, dys, 16, 16, 4, 4, xs, dxs, 12, 12, 3, 3, 2, 2, 3, 3, 2, 2, t,
            )
        };
        assert_eq!(error_text(), "");
    }
    for z in 0..2 {
        for r in 0..4 {
            for col in 0..4 {
                let i = z * 16 + r * 4 + col;
                let inside = r < 3 && col < 2;
                let want = if inside {
                    (z * 9 + r * 3 + col) as f32
                } else {
                    -1.0
                };
                assert_eq!(y[i], want, "y[{z}][{r}][{col}]");
                assert_eq!(dy[i], if inside { 0.0 } else { 5.0 }, "dy[{z}][{r}][{col}]");
            }
        }
    }
    for z in 0..2 {
        for r in 0..3 {
            for col in 0..3 {
                let i = z * 9 + r * 3 + col;
                assert_eq!(
                    dx[i],
                    if col < 2 { 5.0 } else { 0.0 },
                    "dx[{z}][{r}][{col}]"
                );
            }
        }
    }
}

/// Held: a reverse without its tape, with the tape of a call on other buffers, or with other
/// activities than its augmented primal's is refused and writes no derivative.
#[test]
fn ready_misuse_tapes_of_other_calls_are_refused() {
    let (mut a, mut da) = (vec![1.0f32; 3], vec![2.0f32; 3]);
    let (mut c, mut dc) = (vec![3.0f32; 3], vec![4.0f32; 3]);
    let (mut e, mut de) = (vec![5.0f32; 3], vec![6.0f32; 3]);
    {
        let mut pa = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let mut pc = AdPair::new_host(&mut c[..], &mut dc[..]).unwrap();
        let mut pe = AdPair::new_host(&mut e[..], &mut de[..]).unwrap();
        let (x, dx) = pa.split();
        let dx: *const AdBuf<f32> = dx;
        let (y, dy) = pc.split();
        let dy: *const AdBuf<f32> = dy;
        let (z, dz) = pe.split();
        let dz: *const AdBuf<f32> = dz;
        // SAFETY (each call): live handles; each non-null tape goes to one reverse.
        unsafe { b::memcpy_rev(x, dx, y, dy, null_mut()) };
        assert!(matches!(error(), AdError::NoTape));
        // x ← y, its tape handed to the reverse of x ← z.
        let t = unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(!t.is_null(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dx, z, dz, t) };
        assert!(matches!(error(), AdError::Rule(Error::TapeMismatch(_))));
        // An augmented primal with a Const source (its shadow slot holds the primal), its
        // reverse with the source active.
        let t = unsafe { b::memcpy_aug(x, dx, z, z) };
        assert!(!t.is_null(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dx, z, dz, t) };
        assert!(matches!(error(), AdError::ActivityChanged { .. }));
        // A box tape for another box shape.
        let t = unsafe { b::box3_aug(x, dx, 4, 4, 3, 3, y, dy, 4, 4, 3, 3, 1, 1, 3, 3, 1, 1) };
        assert!(!t.is_null(), "{}", error_text());
        unsafe { b::box3_rev(x, dx, 4, 4, 3, 3, y, dy, 4, 4, 3, 3, 1, 1, 2, 2, 1, 1, t) };
        assert!(matches!(error(), AdError::Rule(Error::TapeMismatch(_))));
    }
    // The augmented primals copied (x ← y, then x ← z, then x ← y's box); no reverse ran.
    assert_eq!(a, [3.0; 3]);
    assert_eq!((da, dc, de), (vec![2.0; 3], vec![4.0; 3], vec![6.0; 3]));
}

/// Held: a destination Enzyme treats as inactive (its shadow slot holds the primal) with an
/// active source would lose the source's derivative: refused in every mode, before the primal.
#[test]
fn ready_misuse_an_inactive_destination_is_refused_before_the_copy() {
    let (mut a, mut da) = (vec![1.0f32; 3], vec![2.0f32; 3]);
    let mut src = [7.0f32; 3];
    let mut dsrc = [8.0f32; 3];
    {
        let mut pa = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let (x, _) = pa.split();
        // SAFETY (each call): a live handle in its own shadow slot; `src`, `dsrc` of 3.
        let t = unsafe { b::htod_aug(x, x, src.as_mut_ptr(), dsrc.as_mut_ptr(), 3, 3) };
        assert!(t.is_null());
        assert!(matches!(error(), AdError::InactiveDestination { .. }));
        unsafe { b::htod_fwd(x, x, src.as_mut_ptr(), dsrc.as_mut_ptr(), 3, 3) };
        assert!(matches!(error(), AdError::InactiveDestination { .. }));
        let t = unsafe {
            b::box3_htod_aug(
                x,
                x,
                4,
                4,
                3,
                3,
                src.as_mut_ptr(),
                dsrc.as_mut_ptr(),
                3,
                3,
                4,
                4,
                3,
                3,
                1,
                1,
                3,
                3,
                1,
                1,
            )
        };
        assert!(t.is_null());
        assert!(matches!(error(), AdError::InactiveDestination { .. }));
    }
    assert_eq!((a, da), (vec![1.0; 3], vec![2.0; 3]));
    assert_eq!((src, dsrc), ([7.0; 3], [8.0; 3]));
}

/// Held: a pageable source given as `&[T]` is only read, in the safe calls and as a `Const`
/// source under Enzyme: a `static` (read-only memory) as the source.
#[test]
fn ready_misuse_a_pageable_source_is_only_read() {
    static SRC: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
    let (mut a, mut da) = (vec![0.0f32; 4], vec![9.0f32; 4]);
    {
        let mut p = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let (x, dx) = p.split();
        let dx: *const AdBuf<f32> = dx;
        copies::memcpy_htod(x, &SRC);
        copies::memcpy_2d_htod(x, 8, &SRC, 8, (2, 2));
        assert_eq!(error_text(), "");
        let s = SRC.as_ptr().cast_mut();
        // SAFETY: live handles; the source in its own shadow slot (Const): never written.
        let t = unsafe { b::htod_aug(x, dx, s, s, 4, 4) };
        assert!(!t.is_null(), "{}", error_text());
        unsafe { b::htod_rev(x, dx, s, s, 4, 4, t) };
        unsafe { b::htod_fwd(x, dx, s, s, 4, 4) };
        assert_eq!(error_text(), "");
    }
    assert_eq!(a, SRC);
    assert_eq!(da, [0.0; 4], "a Const source: the forward's tangent is 0");
}

/// Held: the errors a bridge records are its thread's: another thread's `take_error` does not
/// see them, nor take them.
#[test]
fn ready_misuse_errors_stay_on_their_thread() {
    assert_eq!(error_text(), "");
    let seen = std::thread::spawn(|| {
        let (mut a, mut da) = (vec![1.0f32; 3], vec![2.0f32; 3]);
        let mut p = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
        let (x, _) = p.split();
        copies::memcpy_htod(x, &[1.0]);
        error_text()
    })
    .join()
    .unwrap();
    assert!(seen.starts_with("1: memcpy_htod (primal)"), "{seen}");
    assert_eq!(error_text(), "", "not this thread's error");
}

/// Held: the bridges' symbols carry the crate's version (`rules_runtime_v<version>::<name>`),
/// so another version of the crate in the program has other symbols; the registration statics
/// too.
#[test]
#[cfg_attr(miri, ignore = "links symbols by name")]
fn ready_misuse_bridge_symbols_carry_the_crate_version() {
    // Declared without parameters: only their addresses are taken, never called.
    unsafe extern "C" {
        #[link_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::memcpy_f32")]
        fn versioned_memcpy();
        #[link_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::memcpy_htod_f64_rev")]
        fn versioned_htod_rev();
        #[link_name = concat!(
            "__enzyme_register_gradient_rules_runtime_v",
            env!("CARGO_PKG_VERSION"),
            "::memcpy_3d_dtoh_f32"
        )]
        static VERSIONED_REGISTRATION: [*const (); 3];
    }
    let addr = |f: *const ()| f as usize;
    assert_eq!(
        addr(versioned_memcpy as *const ()),
        addr(b::memcpy as *const ())
    );
    assert_eq!(
        addr(versioned_htod_rev as *const ()),
        addr(super::ready::for_f64::htod_rev as *const ())
    );
    // SAFETY: the registration static, three function addresses.
    let reg = unsafe { VERSIONED_REGISTRATION };
    assert_eq!(addr(reg[0]), addr(b::box3_dtoh as *const ()));
    assert_eq!(addr(reg[2]), addr(b::box3_dtoh_rev as *const ()));
}

/// A GPU's stream. These tests are `#[ignore]`d: run with `--ignored gpu_ready_misuse_`, a
/// missing GPU is a failure, not a pass.
fn gpu() -> std::sync::Arc<cudarc::driver::CudaStream> {
    crate::cuda::stream(0).expect("a GPU (this test was asked for with --ignored)")
}

/// Held: the handles of pairs made for two streams are refused in one call (primal and
/// augmented primal), before anything is enqueued: nothing changes.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_handles_of_two_streams_are_refused() {
    let (s1, s2) = (gpu(), gpu());
    let mut a = s1.clone_htod(&[1.0f32; 4]).unwrap();
    let mut da = s1.clone_htod(&[2.0f32; 4]).unwrap();
    let mut c = s2.clone_htod(&[3.0f32; 4]).unwrap();
    let mut dc = s2.clone_htod(&[4.0f32; 4]).unwrap();
    {
        let mut pa = AdPair::new(&mut a, &mut da, &s1).unwrap();
        let mut pc = AdPair::new(&mut c, &mut dc, &s2).unwrap();
        let (x, dx) = pa.split();
        let dx: *const AdBuf<f32> = dx;
        let (y, dy) = pc.split();
        let dy: *const AdBuf<f32> = dy;
        copies::memcpy(x, y);
        assert!(error_text().contains("two streams"));
        copies::memcpy_2d(x, 8, y, 8, (2, 2));
        assert!(error_text().contains("two streams"));
        // SAFETY: live handles of two pairs.
        let t = unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(t.is_null());
        assert!(error_text().contains("two streams"));
    }
    s1.synchronize().unwrap();
    assert_eq!(s1.clone_dtoh(&a).unwrap(), [1.0; 4]);
    assert_eq!(s1.clone_dtoh(&da).unwrap(), [2.0; 4]);
    assert_eq!(s2.clone_dtoh(&c).unwrap(), [3.0; 4]);
    assert_eq!(s2.clone_dtoh(&dc).unwrap(), [4.0; 4]);
}

/// Held: a pageable pair without a stream (`new_host`) mixed with a device pair runs on the
/// device pair's stream, both ways, with the reverse's derivatives right.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_a_host_pair_mixed_with_a_device_pair() {
    let s = gpu();
    let (mut h, mut dh) = (vec![1.0f32, 2.0, 3.0], vec![0.0f32; 3]);
    let mut d = s.alloc_zeros::<f32>(3).unwrap();
    let mut dd = s.clone_htod(&[0.5f32; 3]).unwrap();
    {
        let mut ph = AdPair::new_host(&mut h[..], &mut dh[..]).unwrap();
        let mut pd = AdPair::new(&mut d, &mut dd, &s).unwrap();
        let (x, dx) = ph.split();
        let dx: *const AdBuf<f32> = dx;
        let (y, dy) = pd.split();
        let dy: *const AdBuf<f32> = dy;
        // y ← x (host to device), then its reverse: dx += dy, dy ← 0.
        // SAFETY: live handles of two pairs.
        let t = unsafe { b::memcpy_aug(y, dy, x, dx) };
        assert!(!t.is_null(), "{}", error_text());
        unsafe { b::memcpy_rev(y, dy, x, dx, t) };
        assert_eq!(error_text(), "");
        // And back, the safe call: x ← y.
        copies::memcpy(x, y);
        assert_eq!(error_text(), "");
    }
    assert_eq!(s.clone_dtoh(&d).unwrap(), [1.0, 2.0, 3.0]);
    assert_eq!(s.clone_dtoh(&dd).unwrap(), [0.0; 3]);
    assert_eq!((h, dh), (vec![1.0, 2.0, 3.0], vec![0.5; 3]));
}

/// Held: a memset of pageable memory given a stream (`AdPair::new` with a `Vec`) is refused, as
/// cudarc's `memset_zeros` takes device memory; nothing changes.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_memset_of_pageable_memory_with_a_stream_is_refused() {
    let s = gpu();
    let (mut a, mut da) = (vec![3.0f32; 4], vec![1.0f32; 4]);
    {
        let mut p = AdPair::new(&mut a, &mut da, &s).unwrap();
        let (x, dx) = p.split();
        copies::memset_zeros(x);
        assert!(error_text().contains("memset_zeros sets device or unified memory"));
        // SAFETY: live handles of one pair.
        let t = unsafe { b::zeros_aug(x, dx) };
        assert!(t.is_null());
        assert!(error_text().contains("memset_zeros sets device or unified memory"));
    }
    assert_eq!((a, da), (vec![3.0; 4], vec![1.0; 4]));
}

/// Held: bad input on device memory (unequal lengths, a shadow in a primal's place, a box past
/// the buffer, a pitch shorter than a row) is refused before the driver is called.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_bad_device_input_changes_nothing() {
    let s = gpu();
    let mut a = s.clone_htod(&[1.0f32; 4]).unwrap();
    let mut da = s.clone_htod(&[2.0f32; 4]).unwrap();
    let mut c = s.clone_htod(&[3.0f32; 3]).unwrap();
    let mut dc = s.clone_htod(&[4.0f32; 3]).unwrap();
    {
        let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
        let mut pc = AdPair::new(&mut c, &mut dc, &s).unwrap();
        let (x, dx) = pa.split();
        let (y, _) = pc.split();
        copies::memcpy(x, y);
        assert!(matches!(
            error(),
            AdError::Rule(Error::LengthMismatch { .. })
        ));
        copies::memcpy_htod(x, &[5.0; 3]);
        assert!(matches!(
            error(),
            AdError::Rule(Error::LengthMismatch { .. })
        ));
        copies::memcpy(x, dx);
        assert!(error_text().contains("shadow handle"));
        copies::memset_zeros(dx);
        assert!(error_text().contains("shadow handle"));
        copies::memcpy_2d(x, 8, y, 8, (2, 2));
        assert!(matches!(error(), AdError::Rule(Error::BadRegion { .. })));
        copies::memcpy_2d(x, 4, y, 4, (2, 2));
        assert!(matches!(error(), AdError::Rule(Error::BadRegion { .. })));
    }
    assert_eq!(s.clone_dtoh(&a).unwrap(), [1.0; 4]);
    assert_eq!(s.clone_dtoh(&da).unwrap(), [2.0; 4]);
    assert_eq!(s.clone_dtoh(&c).unwrap(), [3.0; 3]);
    assert_eq!(s.clone_dtoh(&dc).unwrap(), [4.0; 3]);
}

/// Held (the promise "host memory finished with when the call returns"): a large device →
/// pinned copy is complete when the safe call returns, even with the pair forgotten (no guard
/// records the copy on the pinned buffer's event, so `as_slice` would not wait for it).
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_pinned_memory_is_written_when_the_call_returns() {
    let s = gpu();
    let ctx = s.context();
    let n = 1 << 24;
    let mut d = s.clone_htod(&vec![1.0f32; n]).unwrap();
    let mut dd = s.alloc_zeros::<f32>(n).unwrap();
    // SAFETY: f32 is valid for any bits; filled below.
    let mut p = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    let mut dp = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    p.as_mut_slice().unwrap().fill(0.0);
    dp.as_mut_slice().unwrap().fill(0.0);
    {
        let mut pd = AdPair::new(&mut d, &mut dd, &s).unwrap();
        let mut pp = AdPair::new(&mut p, &mut dp, &s).unwrap();
        let (x, _) = pd.split();
        let (y, _) = pp.split();
        copies::memcpy(y, x);
        assert_eq!(error_text(), "");
        core::mem::forget(pp);
        core::mem::forget(pd);
    }
    let host = p.as_slice().unwrap();
    assert!(host.iter().all(|v| *v == 1.0), "the copy had not finished");
}

/// Held: a 3D box device → pinned on the driver's path reaches its rows only: the padding
/// between rows and slices, and its derivative, keep their values (`cuMemcpy3DAsync` with the
/// rows-per-slice of each side).
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_3d_box_leaves_row_and_slice_padding_on_the_device() {
    let s = gpu();
    let ctx = s.context();
    let xs: Vec<f32> = (0..18).map(|v| v as f32).collect();
    let mut x = s.clone_htod(&xs).unwrap();
    let mut dx = s.alloc_zeros::<f32>(18).unwrap();
    // SAFETY: f32 is valid for any bits; filled below.
    let mut y = unsafe { ctx.alloc_pinned::<f32>(32) }.unwrap();
    let mut dy = unsafe { ctx.alloc_pinned::<f32>(32) }.unwrap();
    y.as_mut_slice().unwrap().fill(-1.0);
    dy.as_mut_slice().unwrap().fill(5.0);
    {
        let mut px = AdPair::new(&mut x, &mut dx, &s).unwrap();
        let mut py = AdPair::new(&mut y, &mut dy, &s).unwrap();
        let (xh, dxh) = px.split();
        let dxh: *const AdBuf<f32> = dxh;
        let (yh, dyh) = py.split();
        let dyh: *const AdBuf<f32> = dyh;
        // SAFETY: live handles of two pairs on one stream.
        let t = unsafe {
            b::box3_aug(
                yh, dyh, 16, 16, 4, 4, xh, dxh, 12, 12, 3, 3, 2, 2, 3, 3, 2, 2,
            )
        };
        assert!(!t.is_null(), "{}", error_text());
        unsafe {
            b::box3_rev(
                yh, dyh, 16, 16, 4, 4, xh, dxh, 12, 12, 3, 3, 2, 2, 3, 3, 2, 2, t,
            )
        };
        assert_eq!(error_text(), "");
    }
    let (yv, dyv) = (y.as_slice().unwrap(), dy.as_slice().unwrap());
    let dxv = s.clone_dtoh(&dx).unwrap();
    for z in 0..2 {
        for r in 0..4 {
            for col in 0..4 {
                let i = z * 16 + r * 4 + col;
                let inside = r < 3 && col < 2;
                let want = if inside {
                    (z * 9 + r * 3 + col) as f32
                } else {
                    -1.0
                };
                assert_eq!(yv[i], want, "y[{z}][{r}][{col}]");
                assert_eq!(
                    dyv[i],
                    if inside { 0.0 } else { 5.0 },
                    "dy[{z}][{r}][{col}]"
                );
            }
        }
        for r in 0..3 {
            for col in 0..3 {
                let want = if col < 2 { 5.0 } else { 0.0 };
                assert_eq!(dxv[z * 9 + r * 3 + col], want, "dx[{z}][{r}][{col}]");
            }
        }
    }
}

/// Held: empty boxes (width, height or depth 0) on the driver's path copy nothing and are not
/// errors, as on the host; a one-row box whose pitches are not checked (they are never
/// stepped) copies its row.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_empty_and_one_row_boxes_on_the_device() {
    let s = gpu();
    let mut a = s.clone_htod(&[1.0f32; 6]).unwrap();
    let mut da = s.clone_htod(&[2.0f32; 6]).unwrap();
    let mut c = s.clone_htod(&[3.0f32; 6]).unwrap();
    let mut dc = s.clone_htod(&[4.0f32; 6]).unwrap();
    {
        let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
        let mut pc = AdPair::new(&mut c, &mut dc, &s).unwrap();
        let (x, _) = pa.split();
        let (y, _) = pc.split();
        let mut refused = Vec::new();
        for (dl, sl, shape) in [
            ((8, 3), (8, 3), (0, 3, 1)),
            ((8, 3), (8, 3), (2, 0, 1)),
            ((8, 3), (8, 3), (2, 3, 0)),
            ((0, 0), (0, 0), (0, 6, 1)),
            ((0, 0), (0, 0), (0, usize::MAX, 1)),
        ] {
            copies::memcpy_3d(x, dl, y, sl, shape);
            let e = error_text();
            if !e.is_empty() {
                refused.push(format!("{dl:?} {sl:?} {shape:?}: {e}"));
            }
        }
        assert!(
            refused.is_empty(),
            "empty boxes refused:\n{}",
            refused.join("\n")
        );
        // One row, pitches 0 (never stepped on the host): its 3 elements, or, where the
        // driver asks for a pitch that holds the row, a typed error that wrote nothing.
        copies::memcpy_2d(x, 0, y, 0, (3, 1));
        let e = error_text();
        drop(pa);
        let want = if e.is_empty() {
            [3.0, 3.0, 3.0, 1.0, 1.0, 1.0]
        } else {
            assert!(e.starts_with("1: memcpy_3d (primal)"), "{e}");
            [1.0; 6]
        };
        assert_eq!(s.clone_dtoh(&a).unwrap(), want, "{e}");
    }
    assert_eq!(s.clone_dtoh(&da).unwrap(), [2.0; 6]);
    assert_eq!(s.clone_dtoh(&c).unwrap(), [3.0; 6]);
}

/// Held: a ready-made copy on a capturing stream is refused before anything is enqueued (it
/// would wait for the stream, which a capture refuses): the capture stays valid and ends.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_a_copy_during_capture_is_refused_and_the_capture_ends() {
    use cudarc::driver::sys;
    let s = gpu();
    let mut a = s.clone_htod(&[1.0f32; 4]).unwrap();
    let mut da = s.alloc_zeros::<f32>(4).unwrap();
    let mut c = s.clone_htod(&[3.0f32; 4]).unwrap();
    let mut dc = s.alloc_zeros::<f32>(4).unwrap();
    {
        let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
        let mut pc = AdPair::new(&mut c, &mut dc, &s).unwrap();
        let (x, _) = pa.split();
        let (y, _) = pc.split();
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        copies::memcpy(x, y);
        let e1 = error_text();
        copies::memset_zeros(x);
        let e2 = error_text();
        copies::memcpy_2d(x, 8, y, 8, (2, 2));
        let e3 = error_text();
        let end = s.end_capture(sys::CUgraphInstantiate_flags(0));
        assert!(end.is_ok(), "end_capture: {:?}", end.err());
        for e in [e1, e2, e3] {
            assert!(e.contains("captur"), "{e}");
        }
    }
    assert_eq!(s.clone_dtoh(&a).unwrap(), [1.0; 4]);
}
