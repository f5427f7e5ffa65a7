use rules_runtime::derivative_rule;

/// An alias hides the element type from the macro; the trait bounds still catch the mismatch.
type Wide = Vec<f64>;

#[derivative_rule(copy)]
fn widen(#[dst] dst: &mut Wide, #[src] src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = f64::from(*s);
    }
}

fn main() {}
