use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn copy_twice(#[dst] a: &mut [f32], #[dst] b: &mut [f32], #[src] src: &[f32]) {
    a.copy_from_slice(src);
    b.copy_from_slice(src);
}

fn main() {}
