//! Parameters without a buffer role (labels, and those marked `#[inert]`) are passed to the
//! primal unchanged, once per lane.

use rules_runtime::{CopyRule};
use rules_runtime::{Const, Duplicated, derivative_rule};

#[derivative_rule(copy)]
fn scaled_log(
    #[dst] dst: &mut [f32],
    #[inert] calls: &mut usize,
    #[src] src: &[f32],
    label: &str,
    #[inert] chunk: usize,
    #[inert] (lo, hi): (usize, usize),
    #[inert] _unused: Option<&u8>,
) {
    *calls += 1;
    assert!(!label.is_empty() && chunk > 0 && lo <= hi);
    dst.copy_from_slice(src);
}

/// A parameter named `tape` does not clash with the reverse rule's tape.
#[derivative_rule(copy)]
fn with_tape(#[dst] mut dst: &mut [f32], #[src] src: &[f32], #[inert] tape: u8) {
    let _ = tape;
    dst = &mut dst[..];
    dst.copy_from_slice(src);
}

fn main() {
    let x = [1.0f32; 2];
    let (mut dx1, mut dx2) = ([0.0f32; 2], [0.0f32; 2]);
    let (mut y, mut dy1, mut dy2) = ([0.0f32; 2], [0.0f32; 2], [0.0f32; 2]);
    let mut calls = 0;
    scaled_log_rule(&mut calls, "copy", 4, (0, 1), None)
.forward(
Duplicated::batch(&mut y[..], [&mut dy1[..], &mut dy2[..]]),
Duplicated::batch(&x[..], [&mut dx1[..], &mut dx2[..]]),
)
    .unwrap();
    // The primal and one tangent copy per lane.
    assert_eq!(calls, 3);
    let tape = with_tape_rule(7).augmented_primal(Const(&mut y[..]), Const(&x[..])).unwrap();
    with_tape_rule(7).reverse(tape, Const(&mut y[..]), Const(&x[..])).unwrap();
}
