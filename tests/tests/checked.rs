//! The checked mode on host memory (`--features checked`): a primitive that does something other
//! than what its rule's kind says (a copy that scales, permutes, or copies half; a memset of half
//! the buffer; a fill of twice the value) gives `Error::PrimalDisagrees`, naming the rule, the
//! parameter, the count and the first indices, and nothing else is written (no shadow work, no
//! tape); the right primitives pass, their shadows as without the mode.
//!
//! The primitives take no parameter but their roles (and a box's extent), as the macro asks of a
//! copy, memset or fill rule: each one computes what it writes inside its body.

use rules_runtime::{
    Assumed, Const, CopyRule, Dual, Duplicated, Error, FillRule, MemsetRule, PrimalDisagreement,
    RawCopyRule, RegionRule, derivative_rule,
};
use rules_tests::copy_slice_rule;

/// "A copy" that scales.
#[derivative_rule(copy)]
fn scale(#[dst] out: &mut [f32], #[src] input: &[f32]) {
    for (d, s) in out.iter_mut().zip(input) {
        *d = 2.0 * s;
    }
}

/// "A copy" that reverses the order.
#[derivative_rule(copy)]
fn reverse_order(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
        *d = *s;
    }
}

/// "A copy" of the first half only.
#[derivative_rule(copy)]
fn first_half(#[dst] dst: &mut [f64], #[src] src: &[f64]) {
    let k = dst.len() / 2;
    dst[..k].copy_from_slice(&src[..k]);
}

/// "A memset" of the first half only.
#[derivative_rule(memset)]
fn clear_half(#[dst] dst: &mut [f32]) {
    let k = dst.len() / 2;
    dst[..k].fill(0.0);
}

/// A whole memset.
#[derivative_rule(memset)]
fn clear(#[dst] dst: &mut [f32]) {
    dst.fill(0.0);
}

/// "A fill" of twice the value.
#[derivative_rule(fill)]
fn fill_twice(#[dst] dst: &mut [f32], #[value] v: f32) {
    dst.fill(2.0 * v);
}

/// A fill.
#[derivative_rule(fill)]
fn fill(#[dst] dst: &mut [f32], #[value] v: f32) {
    dst.fill(v);
}

/// "A 2D copy" that leaves the last row alone.
#[derivative_rule(copy2d)]
fn rows_but_last(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let (dr, sr) = (dpitch / 4, spitch / 4);
    for y in 0..height.saturating_sub(1) {
        dst[y * dr..y * dr + width].copy_from_slice(&src[y * sr..y * sr + width]);
    }
}

/// "A pointer copy" that scales.
///
/// # Safety
/// Both ranges valid for `n` elements, disjoint.
#[derivative_rule(copy, dst = host, src = host)]
unsafe fn scale_ptr(
    #[dst] dst: *mut f32,
    #[dst_offset] doff: usize,
    #[src] src: *const f32,
    #[src_offset] soff: usize,
    #[len] n: usize,
) {
    for i in 0..n {
        unsafe { *dst.add(doff + i) = 2.0 * *src.add(soff + i) };
    }
}

fn disagreement(e: Error) -> PrimalDisagreement {
    match e {
        Error::PrimalDisagrees(d) => *d,
        e => panic!("expected PrimalDisagrees, got {e}"),
    }
}

fn ramp(n: usize) -> Vec<f32> {
    (1..=n).map(|i| i as f32).collect()
}

#[test]
fn a_copy_that_scales_is_refused_and_its_shadows_are_untouched() {
    let x = ramp(6);
    let (mut y, mut dy, mut dx) = (vec![0.0f32; 6], vec![7.0f32; 6], vec![5.0f32; 6]);
    let e = scale_rule()
        .forward(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap_err();
    let text = e.to_string();
    let d = disagreement(e);
    assert_eq!((d.rule, d.param, d.lane), ("scale", "out", None));
    assert_eq!(d.assumed, Assumed::Copy { src: "input" });
    assert_eq!((d.count, d.total), (6, 6));
    let first: Vec<usize> = d.first.iter().map(|p| p.0).collect();
    assert_eq!(first, [0, 1, 2, 3, 4, 5]);
    assert!(text.contains("`scale`") && text.contains("`out`") && text.contains("`input`"));
    assert!(text.contains("6 of the 6 elements") && text.contains("element 0, element 1"));
    assert!(text.contains("not a copy"), "{text}");
    // Nothing but the primitive's own call wrote: the shadows are as they were.
    assert_eq!(dy, [7.0; 6]);
    assert_eq!(dx, [5.0; 6]);
    // The augmented primal makes no tape.
    let mut y = [0.0f32; 6];
    let e = scale_rule()
        .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))
        .unwrap_err();
    assert_eq!(disagreement(e).count, 6);
    assert_eq!(dy, [7.0; 6]);
}

#[test]
fn a_copy_that_permutes_names_the_elements_that_moved() {
    let x = ramp(5);
    let (mut y, mut dy) = (vec![0.0f32; 5], vec![3.0f32; 5]);
    let e = reverse_order_rule()
        .forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))
        .unwrap_err();
    let d = disagreement(e);
    // The middle element is its own mirror.
    assert_eq!(d.count, 4);
    let first: Vec<usize> = d.first.iter().map(|p| p.0).collect();
    assert_eq!(first, [0, 1, 3, 4]);
    assert_eq!(dy, [3.0; 5]);
}

#[test]
fn a_copy_of_half_the_buffer_names_the_half_it_left_alone() {
    let x: Vec<f64> = (1..=10).map(f64::from).collect();
    let (mut y, mut dy, mut dx) = (vec![-1.0f64; 10], vec![4.0f64; 10], vec![2.0f64; 10]);
    let e = first_half_rule()
        .forward(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap_err();
    let text = e.to_string();
    let d = disagreement(e);
    assert_eq!((d.rule, d.param, d.count), ("first_half", "dst", 5));
    let first: Vec<usize> = d.first.iter().map(|p| p.0).collect();
    assert_eq!(first, [5, 6, 7, 8, 9]);
    assert!(text.contains("slice the buffer at the call"), "{text}");
    assert_eq!((dy, dx), (vec![4.0; 10], vec![2.0; 10]));
}

#[test]
fn a_memset_of_half_the_buffer_is_refused() {
    let (mut y, mut dy) = (vec![7.0f32; 8], vec![1.0f32; 8]);
    let e = clear_half_rule()
        .forward(Duplicated::new(&mut y[..], &mut dy[..]))
        .unwrap_err();
    let d = disagreement(e);
    assert_eq!(
        (d.rule, d.param, d.assumed.clone()),
        ("clear_half", "dst", Assumed::Memset)
    );
    assert_eq!(d.count, 4);
    let first: Vec<usize> = d.first.iter().map(|p| p.0).collect();
    assert_eq!(first, [4, 5, 6, 7]);
    assert_eq!(dy, [1.0; 8]);
    let mut y = [7.0f32; 8];
    let e = clear_half_rule()
        .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]))
        .unwrap_err();
    assert_eq!(disagreement(e).count, 4);
}

#[test]
fn a_fill_of_twice_the_value_is_refused() {
    let (mut y, mut dy) = (vec![0.0f32; 5], vec![1.0f32; 5]);
    let e = fill_twice_rule()
        .forward(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Dual::new(3.0f32, 1.0),
        )
        .unwrap_err();
    let text = e.to_string();
    let d = disagreement(e);
    assert_eq!(d.param, "dst");
    assert_eq!(
        d.assumed,
        Assumed::Fill {
            value: "v",
            shown: "3.0".into()
        }
    );
    assert_eq!((d.count, d.first.len()), (5, 5));
    assert!(text.contains("the value `v` = 3.0"), "{text}");
    assert_eq!(dy, [1.0; 5]);
}

#[test]
fn a_2d_copy_that_skips_a_row_names_rows_and_columns() {
    // 3 rows of 2 elements, pitch 4 elements on both sides.
    let x: Vec<f32> = (1..=12).map(|i| i as f32).collect();
    let (mut y, mut dy) = (vec![0.0f32; 12], vec![6.0f32; 12]);
    let e = rows_but_last_rule(16, 16, 2, 3)
        .forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))
        .unwrap_err();
    let text = e.to_string();
    let d = disagreement(e);
    assert_eq!((d.count, d.total, d.shape), (2, 6, (2, 3, 1)));
    assert_eq!(d.first, [(0, 2, 0), (1, 2, 0)]);
    assert!(
        text.contains("(row 2, column 0), (row 2, column 1)"),
        "{text}"
    );
    assert_eq!(dy, [6.0; 12]);
}

#[test]
fn a_pointer_copy_that_scales_is_refused() {
    let x = ramp(6);
    let (mut y, mut dy) = (vec![0.0f32; 6], vec![9.0f32; 6]);
    // SAFETY: every pointer is valid for 1 + 4 elements, the ranges disjoint.
    let e = unsafe {
        scale_ptr_rule(1, 2, 4).forward(
            Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
            Const(x.as_ptr()),
        )
    }
    .unwrap_err();
    let d = disagreement(e);
    assert_eq!((d.rule, d.param, d.count), ("scale_ptr", "dst", 4));
    assert_eq!(dy, [9.0; 6]);
}

#[test]
fn right_primitives_pass_unchanged() {
    let x = ramp(7);
    let (mut y, mut dy, mut dx) = (vec![0.0f32; 7], vec![0.0f32; 7], ramp(7));
    copy_slice_rule()
        .forward(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert_eq!((&y, &dy), (&x, &dx));
    let mut dy = vec![1.0f32; 7];
    clear_rule()
        .forward(Duplicated::new(&mut y[..], &mut dy[..]))
        .unwrap();
    assert_eq!((y.clone(), dy), (vec![0.0; 7], vec![0.0; 7]));
    let mut dy = vec![0.0f32; 7];
    fill_rule()
        .forward(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Dual::new(2.5f32, 1.5),
        )
        .unwrap();
    assert_eq!((y, dy), (vec![2.5; 7], vec![1.5; 7]));
    // NaN payloads and signed zeros are copied bit for bit: they agree.
    let odd = [f32::NAN, -0.0, f32::from_bits(0x7fc0_1234), 1.0];
    let mut y = [0.0f32; 4];
    copy_slice_rule()
        .forward(
            Duplicated::new(&mut y[..], &mut [0.0f32; 4][..]),
            Const(&odd[..]),
        )
        .unwrap();
    assert_eq!(y.map(f32::to_bits), odd.map(f32::to_bits));
}
