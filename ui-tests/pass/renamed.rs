//! `rule = name` (the generated rule item's name), and visibility.

mod kernels {
    use rules_runtime::derivative_rule;

    /// Public primal: the generated rule is public too.
    #[derivative_rule(copy, rule = CopyInto,)]
    pub fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }

    /// Crate-visible primal, default name.
    #[derivative_rule(copy)]
    pub(crate) fn copy_back(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }
}

use rules_runtime::{Const, CopyRule, Duplicated};

fn main() {
    let x = [1.0f32; 2];
    let mut dx = [0.0f32; 2];
    let (mut y, mut dy) = ([0.0f32; 2], [1.0f32; 2]);
    let mut rule = kernels::CopyInto();
    rule.forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    let tape = rule
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    rule.reverse(
        tape,
        Duplicated::new(&mut y[..], &mut dy[..]),
        Duplicated::new(&x[..], &mut dx[..]),
    )
    .unwrap();
    assert_eq!(dx, [1.0; 2]);
    let tape = kernels::copy_back_rule()
        .augmented_primal(Const(&mut y[..]), Const(&x[..]))
        .unwrap();
    kernels::copy_back_rule()
        .reverse(tape, Const(&mut y[..]), Const(&x[..]))
        .unwrap();
    kernels::copy_back_rule()
        .forward(Const(&mut y[..]), Const(&x[..]))
        .unwrap();
}
