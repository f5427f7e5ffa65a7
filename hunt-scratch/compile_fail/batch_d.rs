//! Batch D: a const generic alone; the bound of batch C's c3 moved into a where clause.
#![allow(unused_variables, dead_code, unused_imports)]
use rules_runtime::prelude::*;
use rules_runtime::{Differentiable, derivative_rule};

// D1 a right copy between arrays of a const-generic length.
#[derivative_rule(copy)]
pub fn d1_const_n<const N: usize>(#[dst] dst: &mut [f32; N], #[src] src: &[f32; N]) { *dst = *src; }
// D2 c3 with its bound in a where clause.
#[derivative_rule(copy)]
pub fn d2_inert_tag_where<T, L>(#[dst] dst: &mut [T], #[src] src: &[T], #[inert] tag: L) where T: Differentiable, L: Copy + PartialEq<T> { dst.copy_from_slice(src); }
fn main() {
    let (mut y, x) = ([0.0f32; 2], [1.0f32; 2]);
    d1_const_n_rule().forward(Const(&mut y), Const(&x)).unwrap();
    d2_inert_tag_where_rule(1.0f32).forward(Const(&mut y[..]), Const(&x[..])).unwrap();
}
