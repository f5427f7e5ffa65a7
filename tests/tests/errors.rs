//! Aliasing and errors: an exact self-copy keeps its cotangent; a partial overlap,
//! a length mismatch, a tape from other arguments and an absurd offset are typed errors raised
//! before anything is written (every primal and shadow is compared with its starting value, and
//! the primal copy is never called); a primal's own error surfaces as `Error::Primal`.

use rules_runtime::{Const, Duplicated, DuplicatedOnly, Error, derivative_rule};
use rules_runtime::{CopyRule, RawCopyRule};
use rules_tests::{copy_slice_rule, lane_ptrs, lanes, ramp};
use std::cell::Cell;

/// A host pointer copy that tolerates aliasing (`ptr::copy`) and counts its calls.
#[derivative_rule(copy, dst = host, src = host)]
unsafe fn copy_within(
    #[inert] calls: &Cell<usize>,
    #[dst] dst: *mut f64,
    #[dst_offset] doff: usize,
    #[src] src: *const f64,
    #[src_offset] soff: usize,
    #[len] n: usize,
) {
    calls.set(calls.get() + 1);
    unsafe { core::ptr::copy(src.add(soff), dst.add(doff), n) }
}

fn addr(v: &[f64], i: usize) -> u64 {
    v.as_ptr().wrapping_add(i) as u64
}

// ---------------------------------------------------------------------------------------------
// Exact self-copy: the identity.

#[test]
fn self_copy_keeps_its_cotangent_width_1() {
    // v[2..6] ← v[2..6]: the same buffer, the same offset, for the primal and the shadow.
    let mut v = ramp::<f64>(8, 1.0);
    let mut dv = ramp::<f64>(8, 10.0);
    let (v0, dv0) = (v.clone(), dv.clone());
    let calls = Cell::new(0);
    let (p, dp) = (v.as_mut_ptr(), dv.as_mut_ptr());
    unsafe {
        copy_within_rule(&calls, 2, 2, 4)
            .forward(Duplicated::new(p, dp), Duplicated::new(p as *const f64, dp))
            .unwrap();
        let tape = copy_within_rule(&calls, 2, 2, 4)
            .augmented_primal(Duplicated::new(p, dp), Duplicated::new(p as *const f64, dp))
            .unwrap();
        // The cotangent arriving at v (its shadow's value) must still be there after the reverse:
        // not doubled (accumulate) and then zeroed, which would lose the gradient.
        copy_within_rule(&calls, 2, 2, 4)
            .reverse(
                tape,
                Duplicated::new(p, dp),
                Duplicated::new(p as *const f64, dp),
            )
            .unwrap();
    }
    assert_eq!(v, v0);
    assert_eq!(dv, dv0, "a self-copy's derivative is the identity");
}

#[test]
fn self_copy_keeps_its_cotangent_width_3() {
    let mut v = ramp::<f64>(6, 1.0);
    let mut dv: [Vec<f64>; 3] = core::array::from_fn(|k| ramp(6, 10.0 * (k + 1) as f64));
    let dv0 = dv.clone();
    let calls = Cell::new(0);
    let p = v.as_mut_ptr();
    let dps = lane_ptrs(&mut dv);
    unsafe {
        copy_within_rule(&calls, 0, 0, 6)
            .forward(
                Duplicated::batch(p, dps),
                Duplicated::batch(p as *const f64, dps),
            )
            .unwrap();
        assert_eq!(dv, dv0, "forward: d_dst ← d_src is the identity");
        let tape = copy_within_rule(&calls, 0, 0, 6)
            .augmented_primal(
                DuplicatedOnly::batch(p, dps),
                Duplicated::batch(p as *const f64, dps),
            )
            .unwrap();
        copy_within_rule(&calls, 0, 0, 6)
            .reverse(
                tape,
                DuplicatedOnly::batch(p, dps),
                Duplicated::batch(p as *const f64, dps),
            )
            .unwrap();
    }
    assert_eq!(dv, dv0, "reverse: the cotangent is kept in every lane");
}

#[test]
fn self_copy_inside_the_seed_round_trip_still_gives_2x() {
    // f(x) = Σ y², y = copy(x) then y ← y in place: dx == 2x exactly.
    let x = [1.0, -2.0, 0.5, 3.0];
    let mut dx = [0.0; 4];
    let (mut y, mut dy) = ([0.0; 4], [0.0; 4]);
    let calls = Cell::new(0);
    unsafe {
        let t1 = copy_within_rule(&calls, 0, 0, 4)
            .augmented_primal(
                Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
                Duplicated::new(x.as_ptr(), dx.as_mut_ptr()),
            )
            .unwrap();
        let (py, pdy) = (y.as_mut_ptr(), dy.as_mut_ptr());
        let t2 = copy_within_rule(&calls, 0, 0, 4)
            .augmented_primal(
                Duplicated::new(py, pdy),
                Duplicated::new(py as *const f64, pdy),
            )
            .unwrap();
        for i in 0..4 {
            *pdy.add(i) = 2.0 * *py.add(i);
        }
        copy_within_rule(&calls, 0, 0, 4)
            .reverse(
                t2,
                Duplicated::new(py, pdy),
                Duplicated::new(py as *const f64, pdy),
            )
            .unwrap();
        copy_within_rule(&calls, 0, 0, 4)
            .reverse(
                t1,
                Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
                Duplicated::new(x.as_ptr(), dx.as_mut_ptr()),
            )
            .unwrap();
    }
    assert_eq!(dx, [2.0, -4.0, 1.0, 6.0]);
    assert_eq!(dy, [0.0; 4]);
}

#[test]
fn disjoint_ranges_of_one_buffer_are_an_ordinary_copy() {
    // v[0..3] ← v[5..8], shadows in one buffer too: no overlap, so the usual rules apply.
    let mut v = ramp::<f64>(8, 1.0);
    let mut dv = ramp::<f64>(8, 10.0);
    let dv0 = dv.clone();
    let calls = Cell::new(0);
    let (p, dp) = (v.as_mut_ptr(), dv.as_mut_ptr());
    unsafe {
        let tape = copy_within_rule(&calls, 0, 5, 3)
            .augmented_primal(Duplicated::new(p, dp), Duplicated::new(p as *const f64, dp))
            .unwrap();
        copy_within_rule(&calls, 0, 5, 3)
            .reverse(
                tape,
                Duplicated::new(p, dp),
                Duplicated::new(p as *const f64, dp),
            )
            .unwrap();
    }
    assert_eq!(v[..3], v[5..]);
    let mut expected = dv0.clone();
    for i in 0..3 {
        expected[5 + i] += dv0[i];
        expected[i] = 0.0;
    }
    assert_eq!(dv, expected);
}

// ---------------------------------------------------------------------------------------------
// Partial overlap: refused before anything is written.

/// Runs forward, augmented primal and reverse of `dst[doff..doff + n] ← src[soff..soff + n]`,
/// where the call is described by pointers, and checks each returns a `PartialOverlap` naming the
/// byte ranges `(dst_start, dst_end, src_start, src_end)`, calls no primal and writes nothing.
macro_rules! assert_partial_overlap_everywhere {
    ($dst:expr, $doff:expr, $src:expr, $soff:expr, $n:expr, $bufs:expr, $bytes:expr) => {{
        let before = $bufs.clone();
        let calls = Cell::new(0);
        let check = |r: Result<(), Error>, mode: &str| match r {
            Err(Error::PartialOverlap {
                dst_start,
                dst_end,
                src_start,
                src_end,
                ..
            }) => assert_eq!((dst_start, dst_end, src_start, src_end), $bytes, "{mode}"),
            other => panic!("{mode}: expected PartialOverlap, got {other:?}"),
        };
        check(
            unsafe { copy_within_rule(&calls, $doff, $soff, $n).forward($dst, $src) },
            "forward",
        );
        check(
            unsafe { copy_within_rule(&calls, $doff, $soff, $n).augmented_primal($dst, $src) }
                .map(drop),
            "augmented primal",
        );
        // A tape with the right shape, from a valid copy between other buffers.
        let tape = {
            let width = $dst.shadows.len();
            let mut a = vec![0.0f64; 64];
            let b = vec![0.0f64; 64];
            let mut da = [vec![0.0f64; 64], vec![0.0f64; 64], vec![0.0f64; 64]];
            let ptrs = lane_ptrs(&mut da);
            unsafe {
                match width {
                    1 => copy_within_rule(&Cell::new(0), $doff, $soff, $n).augmented_primal(
                        Duplicated::new(a.as_mut_ptr(), ptrs[0]),
                        Const(b.as_ptr()),
                    ),
                    _ => copy_within_rule(&Cell::new(0), $doff, $soff, $n).augmented_primal(
                        Duplicated::batch(a.as_mut_ptr(), ptrs),
                        Const(b.as_ptr()),
                    ),
                }
            }
            .unwrap()
        };
        check(
            unsafe { copy_within_rule(&calls, $doff, $soff, $n).reverse(tape, $dst, $src) },
            "reverse",
        );
        assert_eq!(calls.get(), 0, "no primal copy ran");
        assert_eq!($bufs, before, "nothing was written");
    }};
}

#[test]
fn partial_overlap_of_the_primals_is_refused_and_changes_nothing() {
    // v[0..5] ← v[2..7]: the ranges share v[2..5].
    let mut bufs = (
        ramp::<f64>(10, 1.0),
        ramp::<f64>(10, 10.0),
        ramp::<f64>(10, 20.0),
    );
    let (v, dv, dw) = (&mut bufs.0, &mut bufs.1, &mut bufs.2);
    let bytes = (addr(v, 0), addr(v, 5), addr(v, 2), addr(v, 7));
    let (p, dpd, dps) = (v.as_mut_ptr(), dv.as_mut_ptr(), dw.as_mut_ptr());
    assert_partial_overlap_everywhere!(
        Duplicated::new(p, dpd),
        0,
        Duplicated::new(p as *const f64, dps),
        2,
        5,
        bufs,
        bytes
    );
}

#[test]
fn partial_overlap_of_one_lanes_shadows_is_refused_and_changes_nothing() {
    // Primals disjoint, lanes 0 and 1 disjoint; lane 2's shadows share a buffer and overlap by
    // one element. Lanes 0 and 1 must not have been processed before lane 2 is refused.
    let mut bufs = (
        ramp::<f64>(4, 1.0),
        ramp::<f64>(4, 5.0),
        [ramp::<f64>(4, 10.0), ramp(4, 20.0), ramp(7, 30.0)],
        [ramp::<f64>(4, 40.0), ramp(4, 50.0), vec![]],
    );
    let lane2 = &bufs.2[2];
    let bytes = (
        addr(lane2, 0),
        addr(lane2, 4),
        addr(lane2, 3),
        addr(lane2, 7),
    );
    let dst_lanes = lane_ptrs(&mut bufs.2);
    let mut src_lanes = lane_ptrs(&mut bufs.3);
    src_lanes[2] = dst_lanes[2].wrapping_add(3); // dy[2][0..4] ← dy[2][3..7]
    let (py, px) = (bufs.0.as_mut_ptr(), bufs.1.as_ptr());
    assert_partial_overlap_everywhere!(
        Duplicated::batch(py, dst_lanes),
        0,
        Duplicated::batch(px, src_lanes),
        0,
        4,
        bufs,
        bytes
    );
}

#[test]
fn a_zero_length_copy_never_overlaps() {
    let mut v = ramp::<f64>(4, 1.0);
    let mut dv = ramp::<f64>(4, 10.0);
    let (v0, dv0) = (v.clone(), dv.clone());
    let calls = Cell::new(0);
    let (p, dp) = (v.as_mut_ptr(), dv.as_mut_ptr());
    unsafe {
        copy_within_rule(&calls, 0, 1, 0)
            .forward(Duplicated::new(p, dp), Duplicated::new(p as *const f64, dp))
    }
    .unwrap();
    assert_eq!((v, dv), (v0, dv0));
}

// ---------------------------------------------------------------------------------------------
// Length mismatches (slice rules): refused before anything is written.

fn assert_length_mismatch(r: Result<(), Error>, expected: usize, found: usize, what: &str) {
    match r {
        Err(Error::LengthMismatch {
            what: w,
            expected: e,
            found: f,
        }) => {
            assert_eq!((e, f), (expected, found), "{w}");
            assert!(w.contains(what), "the error names {what:?}: {w}");
        }
        other => panic!("expected LengthMismatch for {what}, got {other:?}"),
    }
}

#[test]
fn dst_and_src_of_different_lengths_are_refused() {
    let x = ramp::<f32>(5, 1.0);
    let mut y = ramp::<f32>(4, 10.0);
    let (mut dx, mut dy) = (ramp::<f32>(5, 20.0), ramp::<f32>(4, 30.0));
    let before = (x.clone(), y.clone(), dx.clone(), dy.clone());
    let r = copy_slice_rule().forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Duplicated::new(&x[..], &mut dx[..]),
    );
    assert_length_mismatch(r, 5, 4, "dst");
    let r = copy_slice_rule().augmented_primal(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Duplicated::new(&x[..], &mut dx[..]),
    );
    assert_length_mismatch(r.map(drop), 5, 4, "dst");
    let r = copy_slice_rule().forward(Const(&mut y[..]), Const(&x[..]));
    assert_length_mismatch(r, 5, 4, "dst");
    assert_eq!((x, y, dx, dy), before);
}

#[test]
fn a_shadow_of_the_wrong_length_is_refused_in_every_mode() {
    // Width 3; only lane 2's shadow of dst (then of src) is one element short. Lanes 0 and 1
    // and the primal must be untouched afterwards.
    let n = 4;
    let x = ramp::<f64>(n, 1.0);
    let y0 = ramp::<f64>(n, 10.0);
    // Tapes are consumed by the reverse: one per call.
    let good_tape = || {
        let (mut y, mut dy, mut dx) = (
            y0.clone(),
            [vec![0.0; n], vec![0.0; n], vec![0.0; n]],
            [vec![0.0; n], vec![0.0; n], vec![0.0; n]],
        );
        copy_slice_rule()
            .augmented_primal(
                Duplicated::batch(&mut y[..], lanes(&mut dy)),
                Duplicated::batch(&x[..], lanes(&mut dx)),
            )
            .unwrap()
    };
    for short in ["dst", "src"] {
        let mut y = y0.clone();
        let mut dy: [Vec<f64>; 3] = core::array::from_fn(|k| ramp(n, 20.0 * (k + 1) as f64));
        let mut dx: [Vec<f64>; 3] = core::array::from_fn(|k| ramp(n, -20.0 * (k + 1) as f64));
        if short == "dst" {
            dy[2].pop();
        } else {
            dx[2].pop();
        }
        let before = (y.clone(), dy.clone(), dx.clone());
        let what = format!("`{short}` (lane 2)");
        let r = copy_slice_rule().forward(
            Duplicated::batch(&mut y[..], lanes(&mut dy)),
            Duplicated::batch(&x[..], lanes(&mut dx)),
        );
        assert_length_mismatch(r, n, n - 1, &what);
        let r = copy_slice_rule().augmented_primal(
            DuplicatedOnly::batch(&mut y[..], lanes(&mut dy)),
            DuplicatedOnly::batch(&x[..], lanes(&mut dx)),
        );
        assert_length_mismatch(r.map(drop), n, n - 1, &what);
        let r = copy_slice_rule().reverse(
            good_tape(),
            Duplicated::batch(&mut y[..], lanes(&mut dy)),
            Duplicated::batch(&x[..], lanes(&mut dx)),
        );
        assert_length_mismatch(r, n, n - 1, &what);
        assert_eq!((y, dy, dx), before, "nothing written ({short} short)");
    }
}

#[test]
fn a_source_shadow_of_the_wrong_length_is_refused_even_with_a_const_destination() {
    let x = ramp::<f32>(3, 1.0);
    let mut y = ramp::<f32>(3, 10.0);
    let mut dx = ramp::<f32>(2, 20.0);
    let (y0, dx0) = (y.clone(), dx.clone());
    let r = copy_slice_rule().forward(Const(&mut y[..]), Duplicated::new(&x[..], &mut dx[..]));
    assert_length_mismatch(r, 3, 2, "src");
    assert_eq!((y, dx), (y0, dx0), "not even the primal copy ran");
}

// ---------------------------------------------------------------------------------------------
// Tape mismatches.

fn assert_tape_mismatch(r: Result<(), Error>) {
    assert!(
        matches!(r, Err(Error::TapeMismatch(_))),
        "expected TapeMismatch, got {r:?}"
    );
}

#[test]
fn a_tape_from_other_arguments_is_refused_and_changes_nothing() {
    let x4 = ramp::<f64>(4, 1.0);
    let (mut y4, mut dy4, mut dx4) = (vec![0.0; 4], vec![0.0; 4], vec![0.0; 4]);
    // Tapes are consumed by the reverse: the augmented primal runs again for each try (it writes
    // `y4 ← x4` again, and no shadow).
    let tape = |y4: &mut [f64], dy4: &mut [f64], dx4: &mut [f64]| {
        copy_slice_rule()
            .augmented_primal(Duplicated::new(y4, dy4), Duplicated::new(&x4[..], dx4))
            .unwrap()
    };
    let tape_n4 = tape(&mut y4, &mut dy4, &mut dx4);
    assert_eq!((tape_n4.n(), tape_n4.width()), (4, 1));

    // Another length.
    let x3 = ramp::<f64>(3, 1.0);
    let (mut y3, mut dy3, mut dx3) = (vec![0.5; 3], vec![2.0; 3], vec![3.0; 3]);
    let r = copy_slice_rule().reverse(
        tape_n4,
        Duplicated::new(&mut y3[..], &mut dy3[..]),
        Duplicated::new(&x3[..], &mut dx3[..]),
    );
    assert_tape_mismatch(r);
    assert_eq!((y3, dy3, dx3), (vec![0.5; 3], vec![2.0; 3], vec![3.0; 3]));

    // Another width (3 lanes), or a Const destination (no lanes).
    dy4 = vec![2.0; 4];
    let mut dy = [vec![2.0; 4], vec![2.0; 4], vec![2.0; 4]];
    let mut dx = [vec![3.0; 4], vec![3.0; 4], vec![3.0; 4]];
    let tape_n4 = tape(&mut y4, &mut dy4, &mut dx4);
    let r = copy_slice_rule().reverse(
        tape_n4,
        Duplicated::batch(&mut y4[..], lanes(&mut dy)),
        Duplicated::batch(&x4[..], lanes(&mut dx)),
    );
    assert_tape_mismatch(r);
    assert!(dy.iter().all(|l| l[..] == [2.0; 4]) && dx.iter().all(|l| l[..] == [3.0; 4]));
    let tape_n4 = tape(&mut y4, &mut dy4, &mut dx4);
    let r = copy_slice_rule().reverse(
        tape_n4,
        Const(&mut y4[..]),
        Duplicated::new(&x4[..], &mut dx4[..]),
    );
    assert_tape_mismatch(r);
    assert_eq!((&dy4, &dx4), (&vec![2.0; 4], &vec![0.0; 4]));

    // The matching arguments are accepted.
    let tape_n4 = tape(&mut y4, &mut dy4, &mut dx4);
    copy_slice_rule()
        .reverse(
            tape_n4,
            Duplicated::new(&mut y4[..], &mut dy4[..]),
            Duplicated::new(&x4[..], &mut dx4[..]),
        )
        .unwrap();
    assert_eq!((dy4, dx4), (vec![0.0; 4], vec![2.0; 4]));
}

#[test]
fn a_pointer_tape_with_other_offsets_is_refused_and_changes_nothing() {
    let x = ramp::<f64>(8, 1.0);
    let mut y = ramp::<f64>(8, 10.0);
    let (mut dx, mut dy) = (ramp::<f64>(8, 20.0), ramp::<f64>(8, 30.0));
    let calls = Cell::new(0);
    // Tapes are consumed by the reverse: one per try, from the same call.
    let mut tape = || {
        unsafe {
            copy_within_rule(&calls, 1, 2, 3).augmented_primal(
                Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
                Duplicated::new(x.as_ptr(), dx.as_mut_ptr()),
            )
        }
        .unwrap()
    };
    let tapes: Vec<_> = (0..3).map(|_| tape()).collect();
    assert_eq!(
        (tapes[0].dst_offset(), tapes[0].src_offset(), tapes[0].n()),
        (1, 2, 3)
    );
    let before = (y.clone(), dy.clone(), dx.clone());
    for ((doff, soff, n), tape) in [(2, 1, 3), (1, 2, 4), (0, 2, 3)].into_iter().zip(tapes) {
        let r = unsafe {
            copy_within_rule(&calls, doff, soff, n).reverse(
                tape,
                Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
                Duplicated::new(x.as_ptr(), dx.as_mut_ptr()),
            )
        };
        assert_tape_mismatch(r);
        assert_eq!((&y, &dy, &dx), (&before.0, &before.1, &before.2));
    }
}

// ---------------------------------------------------------------------------------------------
// The primal's own error.

#[derive(Debug, PartialEq)]
struct DriverFailure(&'static str);
impl std::fmt::Display for DriverFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "driver failure: {}", self.0)
    }
}
impl std::error::Error for DriverFailure {}

/// A copy primitive that can fail, like a driver call.
#[derivative_rule(copy)]
fn fallible_copy(
    #[inert] fail: bool,
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
) -> Result<(), DriverFailure> {
    if fail {
        return Err(DriverFailure("CUDA_ERROR_ILLEGAL_ADDRESS"));
    }
    dst.copy_from_slice(src);
    Ok(())
}

fn assert_primal_error(r: Result<(), Error>) {
    match r {
        Err(Error::Primal(e)) => {
            assert_eq!(
                e.downcast_ref::<DriverFailure>(),
                Some(&DriverFailure("CUDA_ERROR_ILLEGAL_ADDRESS"))
            );
            let shown = Error::Primal(e).to_string();
            assert!(shown.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{shown}");
        }
        other => panic!("expected Error::Primal, got {other:?}"),
    }
}

#[test]
fn a_failing_primal_surfaces_as_error_primal() {
    let x = [1.0f32, 2.0];
    let (mut y, mut dy, mut dx) = ([0.0f32; 2], [5.0f32; 2], [7.0f32; 2]);
    assert_primal_error(fallible_copy_rule(true).forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Duplicated::new(&x[..], &mut dx[..]),
    ));
    assert_eq!(
        dy, [5.0; 2],
        "no tangent is written after the primal failed"
    );
    // With a DuplicatedOnly destination the primal is skipped, but the tangent copy fails the same.
    assert_primal_error(fallible_copy_rule(true).forward(
        DuplicatedOnly::new(&mut y[..], &mut dy[..]),
        Duplicated::new(&x[..], &mut dx[..]),
    ));
    assert_primal_error(
        fallible_copy_rule(true)
            .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))
            .map(drop),
    );
    assert_eq!((y, dy, dx), ([0.0; 2], [5.0; 2], [7.0; 2]));
    // And when it succeeds, the rules work.
    fallible_copy_rule(false)
        .forward(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert_eq!((y, dy), (x, dx));
}

/// A copy primitive that fails with cudarc's own error, as a driver call does.
#[derivative_rule(copy)]
fn driver_failing_copy(
    #[dst] _dst: &mut [f32],
    #[src] _src: &[f32],
) -> Result<(), rules_runtime::cudarc::driver::DriverError> {
    use rules_runtime::cudarc::driver::{DriverError, sys::cudaError_enum};
    Err(DriverError(cudaError_enum::CUDA_ERROR_ILLEGAL_ADDRESS))
}

#[test]
fn a_primals_driver_error_formats_everywhere() {
    // cudarc formats a `DriverError` by asking the driver for its text, which panics without
    // libcuda; the rule's `Error::Primal` names the code without it.
    let x = [1.0f32, 2.0];
    let mut y = [0.0f32; 2];
    let e = driver_failing_copy_rule()
        .forward(Const(&mut y[..]), Const(&x[..]))
        .unwrap_err();
    assert!(matches!(e, Error::Primal(_)), "{e:?}");
    for shown in [format!("{e}"), format!("{e:?}")] {
        assert!(shown.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{shown}");
    }
    let source = std::error::Error::source(&e).unwrap();
    let held = source.downcast_ref::<rules_runtime::error::PrimalDriverError>();
    assert!(held.is_some(), "{source}");
}

// ---------------------------------------------------------------------------------------------
// Offsets that do not fit in the address space.

#[test]
fn absurd_offsets_give_range_overflow_and_change_nothing() {
    let x = ramp::<f64>(4, 1.0);
    let mut y = ramp::<f64>(4, 10.0);
    let (mut dx, mut dy) = (ramp::<f64>(4, 20.0), ramp::<f64>(4, 30.0));
    let calls = Cell::new(0);
    // Tapes are consumed by the reverse: one per try.
    let mut good_tape = || {
        unsafe {
            copy_within_rule(&Cell::new(0), 0, 0, 4)
                .augmented_primal(Const(y.as_mut_ptr()), Const(x.as_ptr()))
        }
        .unwrap()
    };
    let mut tapes: Vec<_> = (0..4).map(|_| good_tape()).collect();
    let before = (y.clone(), dy.clone(), dx.clone());
    // offset + len overflows usize; (offset + len) · 8 overflows; base + bytes overflows.
    let cases = [
        (usize::MAX, 0, "the primal `dst`"),
        (0, usize::MAX - 1, "the primal `src`"),
        (usize::MAX / 8, 0, "the primal `dst`"),
        (0, usize::MAX / 8 - 8, "the primal `src`"),
    ];
    for (doff, soff, what) in cases {
        let check = |r: Result<(), Error>, mode: &str| match r {
            Err(Error::RangeOverflow {
                what: w,
                offset,
                len,
            }) => {
                assert_eq!(w, what, "{mode}");
                assert_eq!(offset, doff.max(soff), "{mode}");
                assert_eq!(len, 4, "{mode}");
            }
            other => panic!("{mode} ({doff}, {soff}): expected RangeOverflow, got {other:?}"),
        };
        unsafe {
            check(
                copy_within_rule(&calls, doff, soff, 4).forward(
                    Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
                    Duplicated::new(x.as_ptr(), dx.as_mut_ptr()),
                ),
                "forward",
            );
            check(
                copy_within_rule(&calls, doff, soff, 4)
                    .augmented_primal(
                        Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
                        Duplicated::new(x.as_ptr(), dx.as_mut_ptr()),
                    )
                    .map(drop),
                "augmented primal",
            );
            check(
                copy_within_rule(&calls, doff, soff, 4).reverse(
                    tapes.pop().expect("one tape per case"),
                    Const(y.as_mut_ptr()),
                    Const(x.as_ptr()),
                ),
                "reverse",
            );
        }
    }
    assert_eq!(calls.get(), 0, "no primal copy ran");
    assert_eq!((y, dy, dx), before);
}
