// An alias the macro cannot resolve is judged by the compiler, at the user's type: one error
// when it is not `usize`, and the rule's callers see nothing more.
use rules_runtime::derivative_rule;
use rules_runtime::prelude::*;

type Count = u32;

#[derivative_rule(copy2d)]
pub fn rows(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[width] w: Count,
    #[height] h: usize,
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
) {
    let _ = (dst, src, w, h, dp, sp);
}

fn main() {
    let (mut y, x) = ([0.0f32; 4], [1.0f32; 4]);
    let _ = rows_rule(2, 2, 8, 8).forward(Const(&mut y[..]), Const(&x[..]));
}
