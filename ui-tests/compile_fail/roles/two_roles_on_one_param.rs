use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn both(#[dst] #[src] buf: &mut [f32], other: &[f32]) {
    buf.copy_from_slice(other);
}

#[derivative_rule(copy)]
fn repeated(#[dst] #[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
