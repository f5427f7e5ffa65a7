use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn opaque_buffers(#[dst] dst: &mut impl AsMut<[f32]>, #[src] src: &impl AsRef<[f32]>) {
    dst.as_mut().copy_from_slice(src.as_ref());
}

#[derivative_rule(copy)]
fn opaque_option(#[dst] dst: &mut [f32], #[src] src: &[f32], log: impl Fn(usize)) {
    log(src.len());
    dst.copy_from_slice(src);
}

fn main() {}
