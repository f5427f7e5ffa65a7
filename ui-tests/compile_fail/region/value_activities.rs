use rules_runtime::FillRule;
use rules_runtime::{Active, Const, Dual, Duplicated, derivative_rule};

#[derivative_rule(fill)]
fn fill(#[dst] d: &mut [f32], #[value] v: f32) {
    d.fill(v);
}

fn main() {
    let (mut y, mut dy) = ([0.0f32; 2], [0.0f32; 2]);
    // `Active` is a reverse-mode activity.
    let _ = fill_rule().forward(Duplicated::new(&mut y[..], &mut dy[..]), Active(1.0));
    // `Dual` is a forward-mode activity.
    let _ = fill_rule().augmented_primal(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Dual::new(1.0, 1.0),
    );
    // The value's tangents are as many as the destination's shadows.
    let _ = fill_rule().forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Dual::batch(1.0, [1.0, 2.0]),
    );
    let _ = Const(0);
}
