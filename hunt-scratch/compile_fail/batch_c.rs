//! Batch C: generics the macro carries into the rule object (const generics, bounds that name
//! another generic, where clauses, one named lifetime). Right primitives, except c2 (a memset
//! given a value of a generic type).
#![allow(unused_variables, dead_code, unused_imports)]
use rules_runtime::prelude::*;
use rules_runtime::{Differentiable, derivative_rule};

// C1 a right copy between arrays of a const-generic length.
#[derivative_rule(copy)]
pub fn c1_const_n<const N: usize>(#[dst] dst: &mut [f32; N], #[src] src: &[f32; N]) { *dst = *src; }
// C2 a bound that names another generic (P03: a memset value B: Into<T>).
#[derivative_rule(memset)]
pub fn c2_memset_into<T: Differentiable, B: Copy + Into<T>>(#[dst] dst: &mut [T], #[value] v: B) { dst.fill(v.into()); }
// C3 a right copy with an inert generic tag whose bound names T.
#[derivative_rule(copy)]
pub fn c3_inert_tag<T: Differentiable, L: Copy + PartialEq<T>>(#[dst] dst: &mut [T], #[src] src: &[T], #[inert] tag: L) { dst.copy_from_slice(src); }
// C4 a right copy with a where clause.
#[derivative_rule(copy)]
pub fn c4_where<T>(#[dst] dst: &mut [T], #[src] src: &[T]) where T: Differentiable { dst.copy_from_slice(src); }
// C5 a right copy sharing one named lifetime.
#[derivative_rule(copy)]
pub fn c5_one_lifetime<'a>(#[dst] dst: &'a mut [f32], #[src] src: &'a [f32]) { dst.copy_from_slice(src); }
// C6 a right copy generic over an inert label type with a default-free bound.
#[derivative_rule(copy)]
pub fn c6_inert_label<L: Copy + core::fmt::Debug>(#[dst] dst: &mut [f32], #[src] src: &[f32], #[inert] label: L) { dst.copy_from_slice(src); }
fn main() {
    let (mut y, x) = ([0.0f32; 2], [1.0f32; 2]);
    c1_const_n_rule().forward(Const(&mut y), Const(&x)).unwrap();
    c3_inert_tag_rule(1.0f32).forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    c4_where_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    c5_one_lifetime_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    c6_inert_label_rule("x").forward(Const(&mut y[..]), Const(&x[..])).unwrap();
}
