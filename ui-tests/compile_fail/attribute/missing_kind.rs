use rules_runtime::derivative_rule;

#[derivative_rule]
fn bare(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(forward = bare_tangent)]
fn options_only(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
