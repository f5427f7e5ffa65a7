use rules_runtime::derivative_rule;

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn raw_copy(#[dst] dst: *mut f32, #[src] src: *const f32, n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
