use rules_runtime::CopyRule;
use rules_runtime::{Const, Duplicated, derivative_rule};

#[derivative_rule(copy)]
fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {
    let x = [1.0f32; 4];
    let mut dx = [0.0f32; 4];
    let mut y = [0.0f32; 4];
    // A bare buffer instead of an activity.
    let _ = copy_into_rule().forward(&mut y[..], Const(&x[..]));
    // A shared shadow for the source: the reverse pass must write into it.
    let _ = copy_into_rule().forward(Const(&mut y[..]), Duplicated::new(&x[..], &dx[..]));
    let _ = &mut dx;
    // A `Vec` and an array where the primitive takes slices: given as slices (`&v[..]`).
    let v = vec![1.0f32; 4];
    let mut dv = vec![0.0f32; 4];
    let mut dy = [0.0f32; 4];
    let _ = copy_into_rule().forward(Const(&mut y[..]), Duplicated::new(&v, &mut dv));
    let _ = copy_into_rule().forward(Duplicated::new(&mut y, &mut dy), Const(&x[..]));
}
