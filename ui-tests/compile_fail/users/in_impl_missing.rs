// A rule on an associated function without `in_impl`: one error, saying to add it; the caller
// of `S::copy_rule()` sees nothing more.
use rules_runtime::derivative_rule;
use rules_runtime::prelude::*;

pub struct S;

impl S {
    #[derivative_rule(copy)]
    pub fn copy(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }
}

fn main() {
    let (mut y, x) = ([0.0f32; 2], [1.0f32; 2]);
    let _ = S::copy_rule().forward(Const(&mut y[..]), Const(&x[..]));
}
