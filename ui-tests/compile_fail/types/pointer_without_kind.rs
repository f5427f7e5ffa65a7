use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
unsafe fn raw_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

#[derivative_rule(copy, dst = pinned)]
unsafe fn half_declared(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
