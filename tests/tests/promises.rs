//! Regression tests of the promises of README and docs/soundness.md that once
//! failed on host memory: all or nothing (an `Err` changes
//! nothing, a rule never panics half-way), raw region rules that touch only their boxes, errors
//! that format without the driver, and box arithmetic that never overflows. The GPU ones are in
//! `gpu_promises.rs`; the tape that cannot be replayed is a compile-fail case
//! (`ui-tests/compile_fail/soundness/tape_replay.rs`).
//!
//! Each test names the promise it holds, and fails on code that breaks it.
//! `raw_region_rules_on_interleaved_boxes_from_two_threads` passes natively and fails under
//! Miri (`cargo +nightly miri test -p rules-tests --test promises`, flags as in
//! `tools/miri.sh`).

use rules_runtime::__private::Boxes;
use rules_runtime::cudarc::driver::{DriverError, sys};
use rules_runtime::{
    CopyRule, Duplicated, Error, On, Pitched, RawRegionRule, RegionRule, Result, derivative_rule,
};
use rules_tests::lanes;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The message of a caught panic.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into())
}

/// Runs `f`, failing the test with the panic's message if it panics.
fn no_panic<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => panic!(
            "{what} panicked ({}); it must return a typed result",
            panic_text(&*p)
        ),
    }
}

// ---- all or nothing -----------------------------------------------------------------------------

/// A fill of rows from a value held in a one-element buffer.
#[derivative_rule(fill)]
pub fn fill_rows_from(
    #[dst] dst: &mut [f64],
    #[value] v: &[f64],
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let r = pitch / size_of::<f64>();
    for y in 0..height {
        dst[y * r..y * r + width].fill(v[0]);
    }
}

/// All or nothing. The reverse of a fill from a one-element buffer whose
/// lane-1 value shadow has 2 elements is refused before any lane is touched: lane 0's box is not
/// summed into its value shadow nor zeroed. (The tape comes from a call with well-formed
/// shadows: the fingerprint covers the primals only, and a fresh shadow at the reverse is
/// ordinary use.)
#[test]
fn a_fill_from_a_value_buffer_refuses_a_bad_lane_before_touching_lane_0() {
    let pitch = 4 * size_of::<f64>();
    let (w, h) = (2, 2); // the box: elements 0, 1, 4, 5
    let v = [1.5f64];
    let mut y = vec![0.0f64; 8];
    let dy0: [Vec<f64>; 2] = [
        (0..8).map(|i| i as f64 + 1.0).collect(),
        (0..8).map(|i| 10.0 * (i as f64 + 1.0)).collect(),
    ];
    let mut dy = dy0.clone();
    let (mut dv0, mut dv1) = (vec![0.5f64], vec![0.25f64]);
    let tape = fill_rows_from_rule(pitch, w, h)
        .augmented_primal(
            Duplicated::batch(&mut y[..], lanes(&mut dy)),
            Duplicated::batch(&v[..], [&mut dv0[..], &mut dv1[..]]),
        )
        .expect("a well-formed augmented primal");
    assert_eq!(y, [1.5, 1.5, 0.0, 0.0, 1.5, 1.5, 0.0, 0.0]);
    let y_after = y.clone();
    // Lane 1's value shadow is now two elements: a value buffer holds one.
    let mut dv1_long = vec![0.25f64, 0.25];
    let r = fill_rows_from_rule(pitch, w, h).reverse(
        tape,
        Duplicated::batch(&mut y[..], lanes(&mut dy)),
        Duplicated::batch(&v[..], [&mut dv0[..], &mut dv1_long[..]]),
    );
    assert!(
        matches!(
            r,
            Err(Error::LengthMismatch { .. } | Error::BadRegion { .. })
        ),
        "a two-element value shadow must be refused: {r:?}"
    );
    assert_eq!(
        dv0,
        [0.5],
        "lane 0's value shadow changed although the call returned Err (its box was summed into it)"
    );
    assert_eq!(
        dy[0], dy0[0],
        "lane 0's cotangent changed although the call returned Err (its box was zeroed)"
    );
    assert_eq!(dy[1], dy0[1], "lane 1's cotangent changed");
    assert_eq!(dv1_long, [0.25, 0.25], "lane 1's value shadow changed");
    assert_eq!(y, y_after, "the primal changed");
}

// ---- all or nothing: one rule, one set of length rules ------------------------------------------

/// A plain copy whose reverse restores the destination's old contents.
#[derivative_rule(copy, restore)]
pub fn copy_restoring(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

/// The same copy without `restore`: the length rules `copy, restore` must share.
#[derivative_rule(copy)]
pub fn copy_plain(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

/// All or nothing, one rule one set of length rules. `copy, restore` with a
/// destination shadow longer than its primal is refused with `LengthMismatch` before anything is
/// written, as the plain `copy` refuses it; the user's `copy_from_slice` never sees the longer
/// shadow (today it panics mid-forward, after the primal and lane 0 were written).
#[test]
fn copy_restore_refuses_a_longer_shadow_as_copy_does() {
    let x = [1.0f32, 2.0, 3.0];
    let y0 = [7.0f32, 8.0, 9.0];
    let dx0 = [[0.5f32, 0.25, 0.125], [4.0, 5.0, 6.0]];
    let dy0: [Vec<f32>; 2] = [vec![-1.0, -2.0, -3.0], vec![-4.0, -5.0, -6.0, -7.0]];

    // The plain copy: refused, nothing written.
    let (mut y, mut dx, mut dy) = (y0, dx0, dy0.clone());
    let [dx_0, dx_1] = &mut dx;
    let e = copy_plain_rule()
        .forward(
            Duplicated::batch(&mut y[..], lanes(&mut dy)),
            Duplicated::batch(&x[..], [&mut dx_0[..], &mut dx_1[..]]),
        )
        .unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "plain copy: {e}");
    assert_eq!((y, &dy), (y0, &dy0), "plain copy: nothing written");

    // With `restore`: the same call must get the same answer.
    let (mut y, mut dx, mut dy) = (y0, dx0, dy0.clone());
    let r = catch_unwind(AssertUnwindSafe(|| {
        let [dx_0, dx_1] = &mut dx;
        copy_restoring_rule().forward(
            Duplicated::batch(&mut y[..], lanes(&mut dy)),
            Duplicated::batch(&x[..], [&mut dx_0[..], &mut dx_1[..]]),
        )
    }));
    let r = r.unwrap_or_else(|p| {
        panic!(
            "the forward of `copy, restore` panicked ({}) after writing y = {y:?}, lane 0's \
             shadow = {:?}: a shadow longer than its primal must be refused with LengthMismatch \
             before the first write, as the plain `copy` refuses it",
            panic_text(&*p),
            dy[0]
        )
    });
    assert!(
        matches!(r, Err(Error::LengthMismatch { .. })),
        "`copy, restore` forward: {r:?}"
    );
    assert_eq!(
        y, y0,
        "the primal was written although the call returned Err"
    );
    assert_eq!(
        dy, dy0,
        "a shadow was written although the call returned Err"
    );

    // The augmented primal too: the plain copy refuses it, so must `copy, restore`.
    let (mut y, mut dx, mut dy) = (y0, dx0, dy0.clone());
    let [dx_0, dx_1] = &mut dx;
    let e = copy_plain_rule()
        .augmented_primal(
            Duplicated::batch(&mut y[..], lanes(&mut dy)),
            Duplicated::batch(&x[..], [&mut dx_0[..], &mut dx_1[..]]),
        )
        .map(drop)
        .unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "plain copy: {e}");
    let r = no_panic("the augmented primal of `copy, restore`", || {
        copy_restoring_rule()
            .augmented_primal(
                Duplicated::batch(&mut y[..], lanes(&mut dy)),
                Duplicated::batch(&x[..], [&mut dx_0[..], &mut dx_1[..]]),
            )
            .map(drop)
    });
    assert!(
        matches!(r, Err(Error::LengthMismatch { .. })),
        "`copy, restore` augmented primal: {r:?}"
    );
    assert_eq!(
        y, y0,
        "the primal was written although the call returned Err"
    );
}

// ---- a raw region rule touches only its boxes ---------------------------------------------------

/// A pitched copy through raw host pointers, at offsets.
///
/// # Safety
/// Both boxes valid; nothing else touches them during the call.
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy2d, dst = host, src = host)]
pub unsafe fn copy2d_raw(
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[dst_offset] doff: usize,
    #[src_offset] soff: usize,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let (dr, sr) = (dpitch / size_of::<f32>(), spitch / size_of::<f32>());
    for r in 0..height {
        // SAFETY: the caller's contract: row `r` of each box is valid.
        unsafe {
            core::ptr::copy_nonoverlapping(src.add(soff + r * sr), dst.add(doff + r * dr), width)
        }
    }
}

/// Raw pointers handed to another thread: each thread touches only its own rows of the
/// allocation behind them.
#[derive(Clone, Copy)]
struct Shared(*mut f32);
// SAFETY: the threads below use the pointers for disjoint rows only (see the test).
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// A raw region rule touches only its boxes' rows. Two threads run the
/// augmented primal and the reverse of one `copy2d` pointer rule at once, on interleaved boxes of
/// the same four allocations (thread 0 the even rows, thread 1 the odd rows; each box's rows are
/// two rows apart): the calls are disjoint, which is all the rule's contract asks. Today the
/// runtime views each pointer as a `&mut [f32]` from its base to the end of its box, the other
/// thread's rows included, which Miri reports as undefined behaviour (Stacked and Tree Borrows).
/// Natively the values are checked.
#[test]
fn raw_region_rules_on_interleaved_boxes_from_two_threads() {
    const W: usize = 4; // elements per row (and per box row)
    const ROWS: usize = 8; // rows in all: four per thread
    const ROUNDS: usize = if cfg!(miri) { 2 } else { 50 };
    let n = W * ROWS;
    let pitch = 2 * W * size_of::<f32>();
    let mut x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut y = vec![0.0f32; n];
    let mut dx = vec![0.0f32; n];
    let mut dy = vec![0.0f32; n];
    let (px, py, pdx, pdy) = (
        Shared(x.as_mut_ptr()),
        Shared(y.as_mut_ptr()),
        Shared(dx.as_mut_ptr()),
        Shared(dy.as_mut_ptr()),
    );
    std::thread::scope(|scope| {
        for t in 0..2 {
            scope.spawn(move || {
                let (px, py, pdx, pdy) = (px, py, pdx, pdy);
                let off = t * W; // thread 0: rows 0, 2, 4, 6; thread 1: rows 1, 3, 5, 7
                for _ in 0..ROUNDS {
                    // Seed this thread's rows of dy with 1 (through the raw pointer, its rows
                    // only).
                    for r in 0..ROWS / 2 {
                        for k in 0..W {
                            // SAFETY: row `2r + t` is this thread's.
                            unsafe { pdy.0.add(off + r * 2 * W + k).write(1.0) };
                        }
                    }
                    let rule = || copy2d_raw_rule(off, off, pitch, pitch, W, ROWS / 2);
                    // SAFETY: each pointer is valid for this thread's box (its rows of an
                    // allocation of `n` elements); the other thread touches only the other rows;
                    // x, y, dx, dy are four allocations.
                    unsafe {
                        let tape = rule()
                            .augmented_primal(
                                Duplicated::new(py.0, pdy.0),
                                Duplicated::new(px.0 as *const f32, pdx.0),
                            )
                            .unwrap();
                        rule()
                            .reverse(
                                tape,
                                Duplicated::new(py.0, pdy.0),
                                Duplicated::new(px.0 as *const f32, pdx.0),
                            )
                            .unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(y, x, "y = x in both threads' boxes");
    assert!(dx.iter().all(|&v| v == ROUNDS as f32), "dx: {dx:?}");
    assert!(dy.iter().all(|&v| v == 0.0), "dy: {dy:?}");
}

// ---- nothing panics without the driver ----------------------------------------------------------

/// Nothing panics without the driver. `Error` formats a driver error returned
/// by a user's primitive without asking the driver for its text (cudarc's `Display` calls
/// `cuGetErrorString`, which panics where libcuda is missing), and names the error code.
#[test]
fn a_primal_driver_error_formats_without_the_driver() {
    let code = sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE;
    for (how, e) in [
        (
            "Error::Primal(Box::new(..))",
            Error::Primal(Box::new(DriverError(code))),
        ),
        ("Error::primal(..)", Error::primal(DriverError(code))),
    ] {
        let text = catch_unwind(AssertUnwindSafe(|| format!("{e}"))).unwrap_or_else(|p| {
            panic!(
                "formatting {how} panicked ({}); driver present: {}",
                panic_text(&*p),
                rules_runtime::cuda::driver_available()
            )
        });
        assert!(
            text.contains("CUDA_ERROR_INVALID_VALUE"),
            "{how}: the text names the error code: {text:?}"
        );
        let debug = no_panic("formatting with {:?}", || format!("{e:?}"));
        assert!(debug.contains("CUDA_ERROR_INVALID_VALUE"), "{debug}");
    }
}

// ---- box arithmetic never panics ----------------------------------------------------------------

/// A region rule written by hand (the macro takes no offsets on references, so only a
/// hand-written one can place an empty box this far): a pitched copy whose destination box is
/// empty (width 0) at element `usize::MAX - 3`.
struct EmptyBoxFarAway;

impl<'s> RegionRule<'s, [f32], [f32]> for EmptyBoxFarAway {
    fn __plan(&self) -> (On<'s>, Boxes, bool) {
        let far = Pitched::rows(usize::MAX - 3, 0, 1, 0);
        let here = Pitched::rows(0, 0, 1, 0);
        (On::Host, Boxes::copy(far, here), false)
    }
    fn __primal(&mut self, _: &mut [f32], _: &[f32]) -> Result<()> {
        Ok(())
    }
}

/// An empty box at a huge offset is an answer, never a panic. Today the
/// whole-call check (`rules/region/check.rs`) computes the box's byte address with unchecked
/// arithmetic and a debug build panics with an arithmetic overflow. An empty box copies nothing,
/// so `Ok` (nothing written) or a typed `Err` both keep the promise.
#[test]
fn an_empty_box_at_a_huge_offset_is_not_a_panic() {
    let x = [1.0f32, 2.0];
    let (mut y, mut dx, mut dy) = ([3.0f32; 2], [0.5f32; 2], [0.25f32; 2]);
    let r = no_panic(
        "the forward of a region rule with an empty box at usize::MAX - 3",
        || {
            EmptyBoxFarAway.forward(
                Duplicated::new(&mut y[..], &mut dy[..]),
                Duplicated::new(&x[..], &mut dx[..]),
            )
        },
    );
    eprintln!("forward: {r:?}");
    let tape = no_panic("the augmented primal", || {
        EmptyBoxFarAway.augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
    });
    if let Ok(tape) = tape {
        let r = no_panic("the reverse", || {
            EmptyBoxFarAway.reverse(
                tape,
                Duplicated::new(&mut y[..], &mut dy[..]),
                Duplicated::new(&x[..], &mut dx[..]),
            )
        });
        eprintln!("reverse: {r:?}");
    }
    assert_eq!(
        (y, dx, dy),
        ([3.0; 2], [0.5; 2], [0.25; 2]),
        "nothing written"
    );
    // The public box operations, with the same empty box.
    let far = Pitched::rows(usize::MAX - 3, 0, 1, 0);
    let here = Pitched::rows(0, 0, 1, 0);
    let mut a = vec![1.0f32; 4];
    let mut b = vec![2.0f32; 4];
    no_panic("zero_region", || {
        rules_runtime::zero_region(On::Host, &mut a, far)
    })
    .ok();
    no_panic("accumulate_region", || {
        rules_runtime::accumulate_region(On::Host, &mut a, far, &b, here)
    })
    .ok();
    no_panic("accumulate_and_zero_region", || {
        rules_runtime::accumulate_and_zero_region(On::Host, &mut a, here, &mut b, far)
    })
    .ok();
    no_panic("sum_region", || {
        rules_runtime::sum_region(On::Host, &a, far)
    })
    .ok();
    if let Ok(mut saved) = no_panic("save_region", || {
        rules_runtime::save_region(On::Host, &a, far)
    }) {
        no_panic("restore_region", || {
            rules_runtime::restore_region(On::Host, &mut a, far, &mut saved)
        })
        .ok();
    }
    assert_eq!((a, b), (vec![1.0; 4], vec![2.0; 4]), "nothing written");
}

// ---- attacks from safe code on the same promises (docs/soundness.md) ------------------------------

/// A fill of the whole destination, restoring the old contents in reverse.
#[derivative_rule(fill, restore)]
fn fill_restore(#[dst] dst: &mut [f32], #[value] v: f32) {
    dst.fill(v);
}

/// The same fill, without restore.
#[derivative_rule(fill)]
fn fill_plain(#[dst] dst: &mut [f32], #[value] v: f32) {
    dst.fill(v);
}

/// A memset of the whole destination, restoring in reverse.
#[derivative_rule(memset, restore)]
fn memset_restore(#[dst] dst: &mut [f32], #[value] byte: u8) {
    dst.iter_mut()
        .for_each(|x| *x = f32::from_bits(u32::from_ne_bytes([byte; 4])));
}

/// Tapes: a region tape names the kind of rule that made it and whether that
/// rule restores. The tape of a fill with `restore` handed to a plain fill's reverse, or a
/// memset's tape to a fill's reverse, on the same buffers, is `TapeMismatch` and changes nothing
/// (the plain fill's reverse wrote the saved primal back, and the fill took the memset's tape).
#[test]
fn a_tape_of_another_kind_of_rule_is_refused() {
    use rules_runtime::{Active, FillRule, MemsetRule};
    let mut y = [1.0f32, 2.0, 3.0];
    let mut dy = [0.0f32; 3];
    let tape = fill_restore_rule()
        .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Active(7.0))
        .unwrap();
    assert_eq!(y, [7.0; 3]);
    dy = [1.0; 3];
    let r = fill_plain_rule().reverse(tape, Duplicated::new(&mut y[..], &mut dy[..]), Active(7.0));
    assert!(matches!(r, Err(Error::TapeMismatch(_))), "{r:?}");
    assert_eq!((y, dy), ([7.0; 3], [1.0; 3]), "nothing written");

    let tape = memset_restore_rule(0)
        .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]))
        .unwrap();
    let r = fill_plain_rule().reverse(tape, Duplicated::new(&mut y[..], &mut dy[..]), Active(0.0));
    assert!(matches!(r, Err(Error::TapeMismatch(_))), "{r:?}");
    assert_eq!(dy, [1.0; 3], "nothing written");
}

/// A fill of rows with a value, restoring the old rows in reverse.
#[derivative_rule(fill, restore)]
fn fill_rows_restore(
    #[dst] dst: &mut [f32],
    #[value] v: f32,
    #[width] width: usize,
    #[height] height: usize,
    #[dst_pitch] pitch: usize,
) {
    // An empty box fills nothing, whatever its other side (the runtime checked non-empty ones).
    if width == 0 {
        return;
    }
    for r in 0..height {
        dst[r * pitch / 4..r * pitch / 4 + width].fill(v);
    }
}

/// Typed results, no panic or abort: an empty box of absurd width or height
/// through a rule with `restore` (the saved box was sized, and its rows reserved, before the
/// box was known to be empty), and through `save_region` directly. A box with no row is
/// accepted; a width-0 box whose row starts step past the buffer is a `BadRegion` (a primitive
/// may step its pointers to each row), with nothing written.
#[test]
fn empty_boxes_of_absurd_extent_are_not_a_panic() {
    use rules_runtime::{Active, FillRule, save_region};
    for (w, h) in [(usize::MAX / 2, 0), (0, usize::MAX), (0, 1 << 40)] {
        let (mut y, mut dy) = ([1.0f32; 4], [0.0f32; 4]);
        let r = no_panic("a restore rule's augmented primal", || {
            fill_rows_restore_rule(w, h, 4)
                .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Active(2.0))
                .map(drop)
        });
        match h {
            0 => r.unwrap(),
            _ => assert!(
                matches!(r, Err(Error::BadRegion { .. })),
                "{w} × {h}: {r:?}"
            ),
        }
        assert_eq!(y, [1.0; 4], "an empty box fills nothing");
    }
    let a = [1.0f32; 4];
    let r = no_panic("save_region", || {
        save_region(On::Host, &a[..], Pitched::rows(0, 0, usize::MAX, 4)).map(drop)
    });
    assert!(matches!(r, Err(Error::BadRegion { .. })), "{r:?}");
    no_panic("save_region", || {
        save_region(On::Host, &a[..], Pitched::rows(4, 3, 0, 4)).map(drop)
    })
    .unwrap();
}
