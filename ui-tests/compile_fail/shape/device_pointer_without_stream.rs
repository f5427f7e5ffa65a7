use rules_runtime::derivative_rule;

#[derivative_rule(copy, dst = device, src = host)]
unsafe fn upload(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    let _ = (dst, src, n);
}

fn main() {}
