// A misspelled role still gets its "did you mean"; lint attributes beside it are kept.
use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
pub fn copy(#[allow(unused_mut)] #[dts] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
