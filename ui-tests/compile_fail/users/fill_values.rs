// A fill value by reference, or of another type parameter: one error each, saying what to
// write; the callers (`let [dv] = ...reverse(..)`) see nothing more.
use rules_runtime::prelude::*;
use rules_runtime::{Differentiable, derivative_rule};

#[derivative_rule(fill)]
pub fn by_ref(#[dst] dst: &mut [f32], #[value] v: &f32) {
    dst.fill(*v);
}

#[derivative_rule(fill)]
pub fn other_param<T: Differentiable, V: Copy + Into<T>>(#[dst] dst: &mut [T], #[value] v: V) {
    dst.fill(v.into());
}

fn main() {
    let (mut x, mut dx) = (vec![0.0f32; 3], vec![1.0f32; 3]);
    let tape = by_ref_rule().augmented_primal(Duplicated::new(&mut x[..], &mut dx[..]), Active(1.0f32)).unwrap();
    let [dv] = by_ref_rule().reverse(tape, Duplicated::new(&mut x[..], &mut dx[..]), Active(1.0f32)).unwrap();
    let _: f32 = dv;
    // The result unnamed: its lanes are inferred from the destination, as the rule's are.
    let tape = by_ref_rule().augmented_primal(Duplicated::new(&mut x[..], &mut dx[..]), Active(1.0f32)).unwrap();
    let dvs = by_ref_rule().reverse(tape, Duplicated::new(&mut x[..], &mut dx[..]), Active(1.0f32)).unwrap();
    let _: f32 = dvs[0];
}
