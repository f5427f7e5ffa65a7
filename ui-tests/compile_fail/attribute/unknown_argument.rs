use rules_runtime::derivative_rule;

#[derivative_rule(copy, forwards = tangent)]
fn typo(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, stream = s)]
fn unknown(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, rules_runtime::forward = f)]
fn path_key(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
