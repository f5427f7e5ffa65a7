use rules_runtime::derivative_rule;

// Only pointer `copy` rules are bridged: a memset's, a pitched copy's and a slice copy's
// reverse would need bridges of their own.
#[derivative_rule(memset, autodiff)]
fn clear(#[dst] dst: &mut [f32]) {
    dst.fill(0.0);
}

#[derivative_rule(copy2d, dst = host, src = host, autodiff)]
unsafe fn copy_rows(
    #[dst] dst: *mut f32,
    #[dst_pitch] dp: usize,
    #[src] src: *const f32,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) {
    let _ = (dst, dp, src, sp, w, h);
}

#[derivative_rule(copy, autodiff)]
fn copy_slice(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
