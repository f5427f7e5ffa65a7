use rules_runtime::derivative_rule;

// A bridged rule compiles without the runtime's `autodiff` feature (these tests build without
// it), but its `*_ad` function is only a stand-in: calling it names the missing feature.
#[derivative_rule(copy, dst = host, src = host, autodiff)]
unsafe fn host_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn f(x: &[f32; 3]) -> f32 {
    let mut h = [1.0f32; 3];
    host_copy_ad(&mut h, x, 3);
    h.iter().map(|v| v * v).sum()
}

fn main() {
    let _ = f(&[1.0, 2.0, 3.0]);
}
