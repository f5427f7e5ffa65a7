//! The rule object of an `unsafe fn` primal on references is built by its `unsafe` constructor
//! only: its methods are safe and call the primal, so a struct literal or a field assignment in
//! the defining module must not build or change one without `unsafe`.

use core::marker::PhantomData;
use rules_runtime::{Const, CopyRule, derivative_rule};

/// # Safety
/// `dst` and `src` hold at least `n` elements.
#[derivative_rule(copy)]
unsafe fn copy_n(#[dst] dst: &mut [f32], #[src] src: &[f32], #[inert] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr(), n) }
}

/// # Safety
/// `dst` and `src` have the same length.
#[derivative_rule(copy)]
unsafe fn unchecked(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr(), src.len()) }
}

fn main() {
    let x = [1.0f32; 2];
    let mut y = [0.0f32; 2];
    // A struct literal, with and without other arguments.
    let mut forged = copy_n_rule { n: 1 << 20, __marker: PhantomData };
    forged.forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    let mut empty = unchecked_rule { __marker: PhantomData };
    empty.forward(Const(&mut y[..]), Const(&[1.0f32; 1024][..])).unwrap();
    // A field assignment after a sound construction.
    // SAFETY: both buffers hold 2 elements.
    let mut rule = unsafe { copy_n_rule(2) };
    rule.n = 1 << 20;
    rule.forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    // The one field holds another rule's arguments at another type (and is made by `unsafe`
    // code only: `sealed_arguments.rs`).
    let _moved = unchecked_rule { __args: rule.__args };
}
