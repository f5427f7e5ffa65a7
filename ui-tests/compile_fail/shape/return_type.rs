use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn returns_count(#[dst] dst: &mut [f32], #[src] src: &[f32]) -> usize {
    dst.copy_from_slice(src);
    src.len()
}

#[derivative_rule(copy)]
fn returns_option(#[dst] dst: &mut [f32], #[src] src: &[f32]) -> Option<()> {
    dst.copy_from_slice(src);
    Some(())
}

#[derivative_rule(copy)]
fn returns_value_or_error(#[dst] dst: &mut [f32], #[src] src: &[f32]) -> Result<usize, String> {
    dst.copy_from_slice(src);
    Ok(src.len())
}

fn main() {}
