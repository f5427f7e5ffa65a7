// A rule in a trait impl or a trait (default method) cannot be placed even with `in_impl`: one
// error each, saying where to write it; a one-line `impl` is read too.
use rules_runtime::derivative_rule;

pub trait Copier {
    fn copy(dst: &mut [f32], src: &[f32]);
}

pub struct S;

impl Copier for S {
    #[derivative_rule(copy)]
    fn copy(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }
}

pub trait WithDefault {
    #[derivative_rule(copy)]
    fn copy(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }
}

pub struct T;
#[rustfmt::skip]
impl T { #[derivative_rule(copy)] pub fn copy(#[dst] dst: &mut [f32], #[src] src: &[f32]) { dst.copy_from_slice(src); } }

fn main() {}
