use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn indices(#[dst] dst: &mut [u32], #[src] src: &[u32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy)]
fn masks(#[dst] dst: &mut Vec<bool>, #[src] src: &[bool; 8]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn bytes(#[dst] dst: *mut u8, #[src] src: *const u8, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
