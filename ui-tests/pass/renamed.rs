//! `forward = name`, `augmented_primal = name`, `reverse = name`, and visibility.

mod kernels {
    use rules_runtime::derivative_rule;

    /// Public primal: the generated rules are public too.
    #[derivative_rule(copy, forward = tangent_copy, augmented_primal = record_copy, reverse = adjoint_copy,)]
    pub fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }

    /// Crate-visible primal with only one name changed.
    #[derivative_rule(copy, reverse = pull_back)]
    pub(crate) fn copy_back(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }
}

use rules_runtime::{CopyRule};
use rules_runtime::{Const, Duplicated};

fn main() {
    let x = [1.0f32; 2];
    let mut dx = [0.0f32; 2];
    let (mut y, mut dy) = ([0.0f32; 2], [1.0f32; 2]);
    kernels::tangent_copy(Const(&mut y[..]), Const(&x[..])).unwrap();
    let tape = kernels::record_copy(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Duplicated::new(&x[..], &mut dx[..]),
    )
    .unwrap();
    kernels::adjoint_copy(
        tape,
        Duplicated::new(&mut y[..], &mut dy[..]),
        Duplicated::new(&x[..], &mut dx[..]),
    )
    .unwrap();
    assert_eq!(dx, [1.0; 2]);
    let tape = kernels::copy_back_rule().augmented_primal(Const(&mut y[..]), Const(&x[..])).unwrap();
    kernels::pull_back(tape, Const(&mut y[..]), Const(&x[..])).unwrap();
    kernels::copy_back_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
}
