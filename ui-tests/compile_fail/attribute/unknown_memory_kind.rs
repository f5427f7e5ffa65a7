use rules_runtime::derivative_rule;

#[derivative_rule(copy, dst = hots, src = gpu)]
unsafe fn kinds(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

#[derivative_rule(copy, dst = "host", src = 0)]
unsafe fn literals(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
