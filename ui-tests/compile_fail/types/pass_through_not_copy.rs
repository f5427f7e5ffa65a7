use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn labelled(#[dst] dst: &mut [f32], #[src] src: &[f32], label: String) {
    let _ = label;
    dst.copy_from_slice(src);
}

fn main() {}
