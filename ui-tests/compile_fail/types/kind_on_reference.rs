use rules_runtime::derivative_rule;

#[derivative_rule(copy, dst = device, src = host)]
fn slices(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
