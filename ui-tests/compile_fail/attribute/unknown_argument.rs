use rules_runtime::derivative_rule;

#[derivative_rule(copy, rules = tangent)]
fn typo(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, stream = s)]
fn unknown(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, rules_runtime::rule = f)]
fn path_key(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

// The names of an earlier version's three generated functions: one rule item now.
#[derivative_rule(copy, forward = tangent)]
fn old_name(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
