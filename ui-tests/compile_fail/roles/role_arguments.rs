use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn with_args(#[dst(host)] dst: &mut [f32], #[src = "x"] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
