//! Batch E: a right copy with a const generic that no parameter type mentions (a chunk size).
#![allow(unused_variables, dead_code, unused_imports)]
use rules_runtime::prelude::*;
use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
pub fn e1_chunked<const CHUNK: usize>(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    for (d, s) in dst.chunks_mut(CHUNK).zip(src.chunks(CHUNK)) {
        d.copy_from_slice(s);
    }
}
fn main() {
    let (mut y, x) = ([0.0f32; 2], [1.0f32; 2]);
    e1_chunked_rule::<4>().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
}
