use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
struct Buffer {
    data: Vec<f32>,
}

#[derivative_rule(copy)]
const N: usize = 4;

#[derivative_rule(copy)]
mod kernels {}

fn main() {}
