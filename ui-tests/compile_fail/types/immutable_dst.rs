use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn shared_dst(#[dst] dst: &[f32], #[src] src: &[f32]) {
    let _ = (dst, src);
}

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn const_dst(#[dst] dst: *const f32, #[src] src: *const f32, #[len] n: usize) {
    let _ = (dst, src, n);
}

fn main() {}
