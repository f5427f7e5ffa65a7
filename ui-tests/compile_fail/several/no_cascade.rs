use rules_runtime::{Const, Duplicated, derivative_rule};

// One mistake in the rule: callers of the generated rule object see no further errors.
#[derivative_rule(copy)]
fn copy_into(#[dst] dst: &[f32], #[src] src: &[f32]) {
    let _ = (dst, src);
}

fn main() {
    let x = [1.0f32; 2];
    let mut dx = [0.0f32; 2];
    let mut y = [0.0f32; 2];
    let mut dy = [0.0f32; 2];
    let tape =
        copy_into_rule().augmented_primal(Const(&mut y[..]), Duplicated::new(&x[..], &mut dx[..]));
    let _ = copy_into_rule().reverse(
        tape.unwrap(),
        Duplicated::new(&mut y[..], &mut dy[..]),
        Const(&x[..]),
    );
    let _ = copy_into_rule().forward(Const(&mut y[..]), Const(&x[..]));
    copy_into(&y, &x);
}
