use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn synonyms(#[dest] dst: &mut [f32], #[source] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy)]
fn typos(#[dts] dst: &mut [f32], #[scr] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
