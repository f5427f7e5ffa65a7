// A memset's bit pattern must be written as an integer type: through an alias or as the rule's
// element type, a value of the element type could pass for one, and its derivative, which a fill
// returns, would be dropped without a word.
#![allow(unused_variables)]
use rules_runtime::{Differentiable, derivative_rule};

type Real = f32;

#[derivative_rule(memset)]
pub fn memset_alias(#[dst] dst: &mut [f32], #[value] v: Real) {
    dst.fill(v);
}

#[derivative_rule(memset)]
pub fn memset_generic<T: Differentiable>(#[dst] dst: &mut [T], #[value] v: T) {
    dst.fill(v);
}

#[derivative_rule(memset)]
pub fn memset_float(#[dst] dst: &mut [f32], #[value] v: f32) {
    dst.fill(v);
}

// Written as an integer type, a bit pattern passes through.
#[derivative_rule(memset)]
pub fn memset_bits(#[dst] dst: &mut [f32], #[value] bits: u32) {
    dst.fill(f32::from_bits(bits));
}

fn main() {}
