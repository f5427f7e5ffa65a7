use rules_runtime::derivative_rule;

#[derivative_rule(copy, rule = a, rule = b)]
fn names(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, crate = ::rules_runtime, crate = ::rules_runtime)]
fn krate(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, dst = host, src = host, dst = device)]
unsafe fn kinds(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
