use rules_runtime::derivative_rule;

unsafe extern "C" {
    #[derivative_rule(copy, dst = host, src = host)]
    fn host_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize);
}

trait Copy2 {
    #[derivative_rule(copy)]
    fn copy2(#[dst] dst: &mut [f32], #[src] src: &[f32]);
}

fn main() {}
