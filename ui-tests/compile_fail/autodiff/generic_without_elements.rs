use rules_runtime::{Differentiable, derivative_rule};

// A generic rule needs its element types: each bridge is one `no_mangle` function.
#[derivative_rule(copy, dst = host, src = host, autodiff)]
unsafe fn copy_any<T: Differentiable>(#[dst] dst: *mut T, #[src] src: *const T, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
