use rules_runtime::derivative_rule;

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn raw_copy(
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
    #[len] m: usize,
    #[dst_offset] a: usize,
    #[dst_offset] b: usize,
) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst.add(a + b), n + m) }
}

fn main() {}
