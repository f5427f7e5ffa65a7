// Generic parameters the rule object holds without a field of theirs: a const parameter no
// parameter's type names (a chunk size), and an inert parameter whose bound names the element
// type, which only the buffers' types name.
use rules_runtime::prelude::*;
use rules_runtime::{Differentiable, derivative_rule};

#[derivative_rule(copy)]
pub fn chunked<const CHUNK: usize>(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    for (d, s) in dst.chunks_mut(CHUNK).zip(src.chunks(CHUNK)) {
        d.copy_from_slice(s);
    }
}

#[derivative_rule(copy)]
pub fn tagged<T: Differentiable, L: Copy + PartialEq<T>>(
    #[dst] dst: &mut [T],
    #[src] src: &[T],
    #[inert] tag: L,
) {
    let _ = tag == src[0];
    dst.copy_from_slice(src);
}

fn main() {
    let (mut y, x) = ([0.0f32; 5], [1.0f32, 2.0, 3.0, 4.0, 5.0]);
    chunked_rule::<2>().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    assert_eq!(y, x);
    let mut z = [0.0f64; 2];
    tagged_rule(1.0f64).forward(Const(&mut z[..]), Const(&[3.0f64, 4.0][..])).unwrap();
    assert_eq!(z, [3.0, 4.0]);
}
