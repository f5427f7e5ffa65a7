#![allow(unused_variables)]

use rules_runtime::derivative_rule;

// A memset's value is a bit pattern: a value of an element type is refused, with the kind that
// takes one.
#[derivative_rule(memset)]
fn active_memset(#[dst] d: &mut [f32], #[value] v: f32) {}

#[derivative_rule(fill)]
fn fill_without_value(#[dst] d: &mut [f32], v: f32) {}

#[derivative_rule(fill)]
fn fill_converts(#[dst] d: &mut [f32], #[value] v: f64) {}

#[derivative_rule(fill)]
fn fill_with_bits(#[dst] d: &mut [f32], #[value] v: u32) {}

#[derivative_rule(fill)]
fn fill_mut_value(#[dst] d: &mut [f32], #[value] v: &mut [f32]) {}

#[derivative_rule(fill, dst = host)]
unsafe fn fill_ptr_value(#[dst] d: *mut f32, #[len] n: usize, #[value] v: *const f32) {}

#[derivative_rule(fill)]
fn fill_with_src(#[dst] d: &mut [f32], #[value] v: f32, #[src] s: &[f32]) {}

#[derivative_rule(copy)]
fn value_on_copy(#[dst] d: &mut [f32], #[src] s: &[f32], #[value] v: f32) {}

fn main() {}
