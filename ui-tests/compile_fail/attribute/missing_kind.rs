use rules_runtime::derivative_rule;

#[derivative_rule]
fn bare(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(rule = bare_copy)]
fn options_only(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
