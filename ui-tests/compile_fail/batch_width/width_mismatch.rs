use rules_runtime::CopyRule;
use rules_runtime::{Duplicated, derivative_rule};

#[derivative_rule(copy)]
fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {
    let x = [1.0f32; 4];
    let mut dx = [0.0f32; 4];
    let mut y = [0.0f32; 4];
    let (mut dy1, mut dy2, mut dy3) = ([0.0f32; 4], [0.0f32; 4], [0.0f32; 4]);
    let _ = copy_into_rule().forward(
        Duplicated::batch(&mut y[..], [&mut dy1[..], &mut dy2[..], &mut dy3[..]]),
        Duplicated::new(&x[..], &mut dx[..]),
    );
}
