use rules_runtime::derivative_rule;

struct Buffer(Vec<f32>);

impl Buffer {
    #[derivative_rule(copy)]
    fn fill_from(#[dst] &mut self, #[src] src: &[f32]) {
        self.0.copy_from_slice(src);
    }

    #[derivative_rule(copy)]
    fn copy_out(&self, #[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }
}

fn main() {}
