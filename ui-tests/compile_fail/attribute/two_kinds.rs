use rules_runtime::derivative_rule;

#[derivative_rule(copy, copy)]
fn twice(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
