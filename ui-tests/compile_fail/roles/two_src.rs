use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn concat(#[dst] dst: &mut [f32], #[src] a: &[f32], #[src] b: &[f32]) {
    let (lo, hi) = dst.split_at_mut(a.len());
    lo.copy_from_slice(a);
    hi.copy_from_slice(b);
}

fn main() {}
