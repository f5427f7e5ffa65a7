use rules_runtime::derivative_rule;

/// A buffer type the runtime does not know.
struct Ring {
    data: Vec<f32>,
}

#[derivative_rule(copy)]
fn into_ring(#[dst] dst: &mut Ring, #[src] src: &[f32]) {
    dst.data.copy_from_slice(src);
}

#[derivative_rule(copy)]
fn from_ring(#[dst] dst: &mut [f32], #[src] src: &Ring) {
    dst.copy_from_slice(&src.data);
}

fn main() {}
