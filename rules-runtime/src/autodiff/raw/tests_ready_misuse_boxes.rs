//! The ready-made copies' boxes, tapes, activities, threads and symbols against what safe code
//! and Enzyme on safe code can make them do (see `tests_ready_misuse.rs`).
use super::ready::for_f32 as b;
use super::tapes::{aug_ok, saved_len};
use crate::Error;
use crate::autodiff::{AdBuf, AdError, AdPair, copies};

use super::tests_ready_misuse::{error, error_text};

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
            unsafe {
                b::box3_aug(
                    x, dx, dp, dp, dr, dr, y, dy, sp, sp, sr, sr, w, w, hh, hh, d, d,
                )
            };
            assert!(!aug_ok(), "{what}");
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
            unsafe {
                b::box3_aug(
                    x, dx, dp, dp, dr, dr, y, dy, sp, sp, sr, sr, w, w, h, h, d, d,
                )
            };
            if !aug_ok() {
                refused.push(format!("{dl:?} {sl:?} {shape:?}: {}", error_text()));
                continue;
            }
            unsafe {
                b::box3_rev(
                    x, dx, dp, dp, dr, dr, y, dy, sp, sp, sr, sr, w, w, h, h, d, d,
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
        unsafe { b::box3_aug(x, dx, 16, 16, 2, 2, x, dx, 8, 8, 2, 2, 2, 2, 2, 2, 1, 1) };
        assert!(!aug_ok());
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
        unsafe {
            b::box3_aug(
                ys, dys, 16, 16, 4, 4, xs, dxs, 12, 12, 3, 3, 2, 2, 3, 3, 2, 2,
            )
        };
        assert!(aug_ok(), "{}", error_text());
        unsafe {
            b::box3_rev(
                ys, dys, 16, 16, 4, 4, xs, dxs, 12, 12, 3, 3, 2, 2, 3, 3, 2, 2,
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

/// Held: a reverse without an augmented primal, or whose arguments (buffers, activities, box) are
/// not those of the last augmented primal on its thread, takes no tape (that entry stays for its
/// own reverse), is refused and writes no derivative.
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
        let before = saved_len();
        // SAFETY (each call): live handles.
        unsafe { b::memcpy_rev(x, dx, y, dy) };
        assert!(matches!(error(), AdError::TapeOrder));
        // x ← y, then the reverse of x ← z.
        unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dx, z, dz) };
        assert!(matches!(error(), AdError::TapeOrder));
        // An augmented primal with a Const source (its shadow slot holds the primal), its
        // reverse with the source active.
        unsafe { b::memcpy_aug(x, dx, z, z) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::memcpy_rev(x, dx, z, dz) };
        assert!(matches!(error(), AdError::TapeOrder));
        // A box tape for another box shape.
        unsafe { b::box3_aug(x, dx, 4, 4, 3, 3, y, dy, 4, 4, 3, 3, 1, 1, 3, 3, 1, 1) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::box3_rev(x, dx, 4, 4, 3, 3, y, dy, 4, 4, 3, 3, 1, 1, 2, 2, 1, 1) };
        assert!(matches!(error(), AdError::TapeOrder));
        // Every augmented primal's entry is still there, the last on top: its own reverse takes
        // it, and then the one below is the next reverse's.
        assert_eq!(saved_len(), before + 3);
        unsafe { b::box3_rev(x, dx, 4, 4, 3, 3, y, dy, 4, 4, 3, 3, 1, 1, 3, 3, 1, 1) };
        assert_eq!(error_text(), "");
        assert_eq!(saved_len(), before + 2);
        unsafe { b::memcpy_rev(x, dx, z, z) };
        assert_eq!(error_text(), "");
        assert_eq!(saved_len(), before + 1);
    }
    // The augmented primals copied (x ← y, then x ← z, then x ← y's box). The box's reverse (3 rows
    // of one element, 4 B apart: all three) added dx into dy and zeroed it; the Const-source
    // copy's reverse zeroed dx (already zero); no other reverse ran.
    assert_eq!(a, [3.0; 3]);
    assert_eq!((da, dc, de), (vec![0.0; 3], vec![6.0; 3], vec![6.0; 3]));
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
        unsafe { b::htod_aug(x, x, src.as_mut_ptr(), dsrc.as_mut_ptr(), 3, 3) };
        assert!(!aug_ok());
        assert!(matches!(error(), AdError::InactiveDestination { .. }));
        unsafe { b::htod_fwd(x, x, src.as_mut_ptr(), dsrc.as_mut_ptr(), 3, 3) };
        assert!(matches!(error(), AdError::InactiveDestination { .. }));
        unsafe {
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
        assert!(!aug_ok());
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
        unsafe { b::htod_aug(x, dx, s, s, 4, 4) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::htod_rev(x, dx, s, s, 4, 4) };
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
