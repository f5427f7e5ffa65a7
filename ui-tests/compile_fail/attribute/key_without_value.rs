use rules_runtime::derivative_rule;

#[derivative_rule(copy, rule)]
fn no_value(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
