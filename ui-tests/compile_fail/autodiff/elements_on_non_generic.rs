use rules_runtime::derivative_rule;

// Not generic: its element type is `f32`, and a list would name others.
#[derivative_rule(copy, dst = host, src = host, autodiff(f32, f64))]
unsafe fn copy_f32(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
