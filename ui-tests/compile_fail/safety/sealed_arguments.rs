//! The last way into the rule object of an `unsafe fn` primal: its one field, whose value only
//! `unsafe` code makes. Even with the hidden names spelled out, safe code cannot.

use core::marker::PhantomData;
use rules_runtime::derivative_rule;

/// # Safety
/// `dst` and `src` hold at least `n` elements.
#[derivative_rule(copy)]
unsafe fn copy_n(#[dst] dst: &mut [f32], #[src] src: &[f32], #[inert] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr(), n) }
}

fn main() {
    let args = __copy_n_rule_args { n: 1 << 20, __marker: PhantomData };
    let _forged = copy_n_rule { __args: rules_runtime::__private::UnsafeArgs::new(args) };
}
