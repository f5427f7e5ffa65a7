use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn mut_src(#[dst] dst: &mut [f32], #[src] src: &mut [f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn mut_src_ptr(#[dst] dst: *mut f32, #[src] src: *mut f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
