use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn copy_into(#[dst] dst: &mut [f32], #[cfg(test)] #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
