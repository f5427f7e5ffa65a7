//! Every activity combination, `dst` ∈ {Const, Duplicated, DuplicatedOnly} × `src` ∈ {Const,
//! Duplicated, DuplicatedOnly}, at widths 1 and 3, forward and reverse, for both rule shapes, with
//! the exact values the semantics prescribe:
//!
//! - forward: the primal copy runs unless `dst` is `DuplicatedOnly`; per lane `d_dst ← d_src`
//!   (or `← 0` for a `Const` source); a `Const` destination's shadows are untouched; `d_src` is
//!   never written;
//! - reverse: per lane `d_src += d_dst` (if `src` is active), then `d_dst ← 0`; a `Const`
//!   destination leaves every shadow alone.
//!
//! Every shadow starts with distinct, nonzero values (different per lane), so a lane mix-up, an
//! overwrite instead of an accumulate, or a forgotten zeroing changes an asserted value.

use rules_runtime::{Const, Duplicated, DuplicatedOnly, derivative_rule};
use rules_runtime::{CopyRule, RawCopyRule};
use rules_tests::{add, copy_ptr_rule, copy_slice_rule, lane_ptrs, lanes, ramp};
use std::cell::Cell;

/// The activity of kind `$k` with primal `$p` and shadows `$s` (not evaluated for `Const`).
macro_rules! act {
    (Const, $p:expr, $s:expr) => {
        Const($p)
    };
    ($k:ident, $p:expr, $s:expr) => {
        $k::batch($p, $s)
    };
}
macro_rules! active {
    (Const) => {
        false
    };
    ($k:ident) => {
        true
    };
}
macro_rules! primal_needed {
    (DuplicatedOnly) => {
        false
    };
    ($k:ident) => {
        true
    };
}

/// `base` with `base[off..off + with.len()]` replaced by `with`.
fn splice<T: Clone>(base: &[T], off: usize, with: &[T]) -> Vec<T> {
    let mut v = base.to_vec();
    v[off..off + with.len()].clone_from_slice(with);
    v
}

/// Starting values: primals `x` (src), `y` (old dst); shadows `dx[k]`, `dy[k]`, all distinct.
struct Start<T, const W: usize> {
    x: Vec<T>,
    y: Vec<T>,
    dx: [Vec<T>; W],
    dy: [Vec<T>; W],
}

impl<T: rules_runtime::Differentiable, const W: usize> Start<T, W> {
    fn new(src_len: usize, dst_len: usize) -> Self {
        Start {
            x: ramp(src_len, 1.0),
            y: ramp(dst_len, 100.0),
            dx: core::array::from_fn(|k| ramp(src_len, 1000.0 * (k + 1) as f64)),
            dy: core::array::from_fn(|k| ramp(dst_len, -1000.0 * (k + 1) as f64)),
        }
    }
}

/// Slice rules: `copy_slice` on `f32`, and on `Complex<f64>`, n = 6.
macro_rules! slice_combo {
    ($name:ident, $d:ident, $s:ident, $w:literal) => {
        mod $name {
            use super::*;
            const W: usize = $w;
            const N: usize = 6;

            #[allow(unused_mut)] // a `Const` activity never borrows its shadows
            fn forward<T: rules_runtime::Differentiable>() {
                let s = Start::<T, W>::new(N, N);
                let (mut y, mut dx, mut dy) = (s.y.clone(), s.dx.clone(), s.dy.clone());
                copy_slice_rule()
                    .forward(
                        act!($d, &mut y[..], lanes(&mut dy)),
                        act!($s, &s.x[..], lanes(&mut dx)),
                    )
                    .unwrap();
                let y_expected = if primal_needed!($d) { &s.x } else { &s.y };
                assert_eq!(
                    &y, y_expected,
                    "the primal copy runs unless dst is DuplicatedOnly"
                );
                assert_eq!(dx, s.dx, "forward never writes the source's shadows");
                for k in 0..W {
                    let expected = if !active!($d) {
                        s.dy[k].clone()
                    } else if active!($s) {
                        s.dx[k].clone()
                    } else {
                        vec![T::zero(); N]
                    };
                    assert_eq!(dy[k], expected, "d_dst of lane {k}");
                }
            }

            #[allow(unused_mut)] // a `Const` activity never borrows its shadows
            fn reverse<T: rules_runtime::Differentiable>() {
                let s = Start::<T, W>::new(N, N);
                let (mut y, mut dx, mut dy) = (s.y.clone(), s.dx.clone(), s.dy.clone());
                let tape = copy_slice_rule()
                    .augmented_primal(
                        act!($d, &mut y[..], lanes(&mut dy)),
                        act!($s, &s.x[..], lanes(&mut dx)),
                    )
                    .unwrap();
                let y_expected = if primal_needed!($d) { &s.x } else { &s.y };
                assert_eq!(
                    &y, y_expected,
                    "the primal copy runs unless dst is DuplicatedOnly"
                );
                assert_eq!(
                    (&dx, &dy),
                    (&s.dx, &s.dy),
                    "the augmented primal writes no shadow"
                );
                assert_eq!(tape.n(), N);
                assert_eq!(tape.width(), if active!($d) { W } else { 0 });
                assert_eq!(tape.primal_ran(), primal_needed!($d));
                // The cotangent seed of dst is its shadow's current (nonzero) value, s.dy.
                copy_slice_rule()
                    .reverse(
                        tape,
                        act!($d, &mut y[..], lanes(&mut dy)),
                        act!($s, &s.x[..], lanes(&mut dx)),
                    )
                    .unwrap();
                assert_eq!(&y, y_expected, "the reverse writes no primal");
                for k in 0..W {
                    let (dx_expected, dy_expected) = if !active!($d) {
                        (s.dx[k].clone(), s.dy[k].clone())
                    } else if active!($s) {
                        (add(&s.dx[k], &s.dy[k]), vec![T::zero(); N])
                    } else {
                        (s.dx[k].clone(), vec![T::zero(); N])
                    };
                    assert_eq!(dx[k], dx_expected, "d_src of lane {k}");
                    assert_eq!(dy[k], dy_expected, "d_dst of lane {k}");
                }
            }

            #[test]
            fn forward_f32() {
                forward::<f32>();
            }
            #[test]
            fn forward_c64() {
                forward::<num_complex::Complex<f64>>();
            }
            #[test]
            fn reverse_f32() {
                reverse::<f32>();
            }
            #[test]
            fn reverse_c64() {
                reverse::<num_complex::Complex<f64>>();
            }
        }
    };
}

/// Pointer rules: `copy_ptr` on `f64` and `bf16`, n = 5, inside larger buffers (dst offset 2,
/// src offset 3), so the elements around the copied range must stay as they were.
macro_rules! ptr_combo {
    ($name:ident, $d:ident, $s:ident, $w:literal) => {
        mod $name {
            use super::*;
            const W: usize = $w;
            const N: usize = 5;
            const DOFF: usize = 2;
            const SOFF: usize = 3;
            const DLEN: usize = DOFF + N + 4;
            const SLEN: usize = SOFF + N + 1;

            #[allow(unused_mut)] // a `Const` activity never borrows its shadows
            fn forward<T: rules_runtime::Differentiable>() {
                let s = Start::<T, W>::new(SLEN, DLEN);
                let (mut y, mut dx, mut dy) = (s.y.clone(), s.dx.clone(), s.dy.clone());
                unsafe {
                    copy_ptr_rule(DOFF, SOFF, N).forward(
                        act!($d, y.as_mut_ptr(), lane_ptrs(&mut dy)),
                        act!($s, s.x.as_ptr(), lane_ptrs(&mut dx)),
                    )
                }
                .unwrap();
                let copied = splice(&s.y, DOFF, &s.x[SOFF..SOFF + N]);
                let y_expected = if primal_needed!($d) { &copied } else { &s.y };
                assert_eq!(
                    &y, y_expected,
                    "the primal copy runs unless dst is DuplicatedOnly"
                );
                assert_eq!(dx, s.dx, "forward never writes the source's shadows");
                for k in 0..W {
                    let expected = if !active!($d) {
                        s.dy[k].clone()
                    } else if active!($s) {
                        splice(&s.dy[k], DOFF, &s.dx[k][SOFF..SOFF + N])
                    } else {
                        splice(&s.dy[k], DOFF, &[T::zero(); N])
                    };
                    assert_eq!(dy[k], expected, "d_dst of lane {k}");
                }
            }

            #[allow(unused_mut)] // a `Const` activity never borrows its shadows
            fn reverse<T: rules_runtime::Differentiable>() {
                let s = Start::<T, W>::new(SLEN, DLEN);
                let (mut y, mut dx, mut dy) = (s.y.clone(), s.dx.clone(), s.dy.clone());
                let tape = unsafe {
                    copy_ptr_rule(DOFF, SOFF, N).augmented_primal(
                        act!($d, y.as_mut_ptr(), lane_ptrs(&mut dy)),
                        act!($s, s.x.as_ptr(), lane_ptrs(&mut dx)),
                    )
                }
                .unwrap();
                let copied = splice(&s.y, DOFF, &s.x[SOFF..SOFF + N]);
                let y_expected = if primal_needed!($d) { &copied } else { &s.y };
                assert_eq!(
                    &y, y_expected,
                    "the primal copy runs unless dst is DuplicatedOnly"
                );
                assert_eq!(
                    (&dx, &dy),
                    (&s.dx, &s.dy),
                    "the augmented primal writes no shadow"
                );
                assert_eq!(
                    (tape.n(), tape.dst_offset(), tape.src_offset()),
                    (N, DOFF, SOFF)
                );
                assert_eq!(tape.width(), if active!($d) { W } else { 0 });
                assert_eq!(tape.primal_ran(), primal_needed!($d));
                unsafe {
                    copy_ptr_rule(DOFF, SOFF, N).reverse(
                        tape,
                        act!($d, y.as_mut_ptr(), lane_ptrs(&mut dy)),
                        act!($s, s.x.as_ptr(), lane_ptrs(&mut dx)),
                    )
                }
                .unwrap();
                assert_eq!(&y, y_expected, "the reverse writes no primal");
                for k in 0..W {
                    let zeroed = splice(&s.dy[k], DOFF, &[T::zero(); N]);
                    let summed = add(&s.dx[k][SOFF..SOFF + N], &s.dy[k][DOFF..DOFF + N]);
                    let (dx_expected, dy_expected) = if !active!($d) {
                        (s.dx[k].clone(), s.dy[k].clone())
                    } else if active!($s) {
                        (splice(&s.dx[k], SOFF, &summed), zeroed)
                    } else {
                        (s.dx[k].clone(), zeroed)
                    };
                    assert_eq!(dx[k], dx_expected, "d_src of lane {k}");
                    assert_eq!(dy[k], dy_expected, "d_dst of lane {k}");
                }
            }

            #[test]
            fn forward_f64() {
                forward::<f64>();
            }
            #[test]
            fn forward_bf16() {
                forward::<half::bf16>();
            }
            #[test]
            fn reverse_f64() {
                reverse::<f64>();
            }
            #[test]
            fn reverse_bf16() {
                reverse::<half::bf16>();
            }
        }
    };
}

macro_rules! for_each_combo {
    ($m:ident) => {
        $m!(const_const_w1, Const, Const, 1);
        $m!(const_const_w3, Const, Const, 3);
        $m!(const_dup_w1, Const, Duplicated, 1);
        $m!(const_dup_w3, Const, Duplicated, 3);
        $m!(const_duponly_w1, Const, DuplicatedOnly, 1);
        $m!(const_duponly_w3, Const, DuplicatedOnly, 3);
        $m!(dup_const_w1, Duplicated, Const, 1);
        $m!(dup_const_w3, Duplicated, Const, 3);
        $m!(dup_dup_w1, Duplicated, Duplicated, 1);
        $m!(dup_dup_w3, Duplicated, Duplicated, 3);
        $m!(dup_duponly_w1, Duplicated, DuplicatedOnly, 1);
        $m!(dup_duponly_w3, Duplicated, DuplicatedOnly, 3);
        $m!(duponly_const_w1, DuplicatedOnly, Const, 1);
        $m!(duponly_const_w3, DuplicatedOnly, Const, 3);
        $m!(duponly_dup_w1, DuplicatedOnly, Duplicated, 1);
        $m!(duponly_dup_w3, DuplicatedOnly, Duplicated, 3);
        $m!(duponly_duponly_w1, DuplicatedOnly, DuplicatedOnly, 1);
        $m!(duponly_duponly_w3, DuplicatedOnly, DuplicatedOnly, 3);
    };
}

mod slice {
    use super::*;
    for_each_combo!(slice_combo);
}

mod pointer {
    use super::*;
    for_each_combo!(ptr_combo);
}

/// A copy that counts its calls, to see which copies the rules run.
#[derivative_rule(copy)]
fn counted_copy(#[inert] calls: &Cell<usize>, #[dst] dst: &mut [f64], #[src] src: &[f64]) {
    calls.set(calls.get() + 1);
    dst.copy_from_slice(src);
}

#[test]
fn forward_runs_the_primal_once_and_the_copy_once_per_active_lane() {
    let x = [1.0, 2.0];
    let mut y = [0.0; 2];
    let mut dy = [vec![0.0; 2], vec![0.0; 2], vec![0.0; 2]];
    let mut dx = [vec![1.0, 1.5], vec![2.0, 2.5], vec![3.0, 3.5]];
    let calls = Cell::new(0);
    counted_copy_rule(&calls)
        .forward(
            Duplicated::batch(&mut y[..], lanes(&mut dy)),
            Duplicated::batch(&x[..], lanes(&mut dx)),
        )
        .unwrap();
    assert_eq!(
        calls.get(),
        1 + 3,
        "the primal, then d_dst ← d_src through the copy itself"
    );
    assert_eq!(dy, dx);

    calls.set(0);
    counted_copy_rule(&calls)
        .forward(
            DuplicatedOnly::batch(&mut y[..], lanes(&mut dy)),
            Duplicated::batch(&x[..], lanes(&mut dx)),
        )
        .unwrap();
    assert_eq!(calls.get(), 3, "DuplicatedOnly skips the primal copy");

    calls.set(0);
    counted_copy_rule(&calls)
        .forward(Duplicated::batch(&mut y[..], lanes(&mut dy)), Const(&x[..]))
        .unwrap();
    assert_eq!(
        calls.get(),
        1,
        "a Const source zeroes d_dst without copying"
    );
    assert_eq!(dy, [[0.0; 2]; 3]);
}

#[test]
fn reverse_runs_no_primal_copy() {
    let x = [1.0, 2.0];
    let (mut y, mut dy, mut dx) = ([0.0; 2], [5.0, 6.0], [0.5, 0.25]);
    let calls = Cell::new(0);
    let tape = counted_copy_rule(&calls)
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert_eq!(calls.get(), 1);
    counted_copy_rule(&calls)
        .reverse(
            tape,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert_eq!(calls.get(), 1, "the reverse is shadow work only");
    assert_eq!((dx, dy), ([5.5, 6.25], [0.0; 2]));

    calls.set(0);
    let tape = counted_copy_rule(&calls)
        .augmented_primal(
            DuplicatedOnly::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert_eq!(calls.get(), 0, "DuplicatedOnly skips the primal copy");
    assert!(!tape.primal_ran());
}

/// `Vec<T>` buffers (taken as `&Vec` on purpose: the rule must accept them).
#[allow(clippy::ptr_arg)]
#[derivative_rule(copy)]
fn copy_vec(#[dst] dst: &mut Vec<f64>, #[src] src: &Vec<f64>) {
    dst.copy_from_slice(src);
}

/// Fixed-size arrays.
#[derivative_rule(copy)]
fn copy_array(#[dst] dst: &mut [half::f16; 4], #[src] src: &[half::f16; 4]) {
    *dst = *src;
}

#[test]
fn vec_buffers_forward_and_reverse() {
    let x = vec![1.0, 2.0, 3.0];
    let (mut y, mut dy) = (vec![0.0; 3], vec![7.0; 3]);
    let mut dx = vec![0.5, -0.5, 0.25];
    copy_vec_rule()
        .forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    assert_eq!((&y, &dy), (&x, &dx));
    dy = vec![10.0, 20.0, 30.0];
    let tape = copy_vec_rule()
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    copy_vec_rule()
        .reverse(
            tape,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    assert_eq!((dx, dy), (vec![10.5, 19.5, 30.25], vec![0.0; 3]));
}

#[test]
fn array_buffers_forward_and_reverse() {
    use half::f16;
    let h = |v: [f32; 4]| v.map(f16::from_f32);
    let x = h([1.0, 2.0, 3.0, 4.0]);
    let (mut y, mut dy) = (h([0.0; 4]), h([9.0; 4]));
    let mut dx = h([0.5, 0.25, -1.0, 2.0]);
    copy_array_rule()
        .forward(
            DuplicatedOnly::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    assert_eq!(y, h([0.0; 4]), "DuplicatedOnly: the primal copy is skipped");
    assert_eq!(dy, dx);
    dy = h([1.0, 1.0, 1.0, 1.0]);
    let tape = copy_array_rule()
        .augmented_primal(Duplicated::new(&mut y, &mut dy), Const(&x))
        .unwrap();
    assert_eq!(y, x);
    copy_array_rule()
        .reverse(tape, Duplicated::new(&mut y, &mut dy), Const(&x))
        .unwrap();
    assert_eq!((dx, dy), (h([0.5, 0.25, -1.0, 2.0]), h([0.0; 4])));
}

#[test]
fn one_rule_serves_an_engine_and_a_hand_written_backward_pass() {
    // The generic rule from the shared crate, called for f32 (width 1) and Complex<f32> (width 3).
    use num_complex::Complex;
    let x = [1.0f32, 2.0];
    let (mut y, mut dy, mut dx) = ([0.0f32; 2], [3.0f32, 4.0], [1.0f32, 1.0]);
    let t = copy_slice_rule()
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    copy_slice_rule()
        .reverse(
            t,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert_eq!((dx, dy), ([4.0, 5.0], [0.0, 0.0]));

    let c = |re: f32, im: f32| Complex::new(re, im);
    let xc = [c(1.0, -1.0)];
    let mut yc = [c(0.0, 0.0)];
    let mut dyc = [vec![c(1.0, 2.0)], vec![c(3.0, 4.0)], vec![c(5.0, 6.0)]];
    let mut dxc = [vec![c(0.5, 0.5)], vec![c(0.0, 0.0)], vec![c(-1.0, 0.0)]];
    let t = copy_slice_rule()
        .augmented_primal(
            Duplicated::batch(&mut yc[..], lanes(&mut dyc)),
            Duplicated::batch(&xc[..], lanes(&mut dxc)),
        )
        .unwrap();
    assert_eq!(yc, xc);
    copy_slice_rule()
        .reverse(
            t,
            Duplicated::batch(&mut yc[..], lanes(&mut dyc)),
            Duplicated::batch(&xc[..], lanes(&mut dxc)),
        )
        .unwrap();
    assert_eq!(
        dxc,
        [vec![c(1.5, 2.5)], vec![c(3.0, 4.0)], vec![c(4.0, 6.0)]]
    );
    assert!(dyc.iter().all(|l| l[..] == [c(0.0, 0.0)]));
}
