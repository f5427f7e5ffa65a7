//! MISLEADING REFUSAL of a right primitive (batch E): a right copy with a const generic that no parameter type mentions (a chunk size).
//! Fails with "error[E0573]: expected type, found const parameter `CHUNK`" at the user's own
//! generic: the generated rule object seems to carry every generic as a type. A const generic that a
//! parameter type mentions (`&mut [f32; N]`) compiles (batch_d.rs, d1).
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
