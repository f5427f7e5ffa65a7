//! A rule on an associated function of an inherent `impl` block, marked `in_impl`: the generated
//! rules are associated functions too, and call the primal as `Self::name` (a proc macro cannot
//! see that it is inside an `impl`, and there the primal is not in scope by its bare name).
#![allow(dead_code)]

use rules_runtime::{CopyRule};
use rules_runtime::{Const, Duplicated, derivative_rule};

struct Buffers;

impl Buffers {
    /// Copies `src` into `dst`.
    #[derivative_rule(copy, in_impl)]
    fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }

    /// A generic one, with a pass-through argument.
    #[derivative_rule(copy, in_impl)]
    pub fn copy_n<T: rules_runtime::Differentiable>(
        #[dst] dst: &mut Vec<T>,
        #[src] src: &Vec<T>,
    ) {
        dst.copy_from_slice(src);
    }
}

fn main() {
    let (x, mut dx, mut y, mut dy) = ([1.0f32, 2.0], [0.0f32; 2], [0.0f32; 2], [0.0f32; 2]);
    let tape = Buffers::copy_into_rule()
.augmented_primal(
Duplicated::new(&mut y[..], &mut dy[..]),
Duplicated::new(&x[..], &mut dx[..]),
)
    .unwrap();
    dy = [1.0, 1.0];
    Buffers::copy_into_rule()
.reverse(
tape,
Duplicated::new(&mut y[..], &mut dy[..]),
Duplicated::new(&x[..], &mut dx[..]),
)
    .unwrap();
    assert_eq!((dx, dy), ([1.0; 2], [0.0; 2]));
    let (a, mut b) = (vec![1.0f64, 2.0], vec![0.0f64; 2]);
    Buffers::copy_n_rule().forward(Const(&mut b), Const(&a)).unwrap();
    assert_eq!(b, [1.0, 2.0]);
}
