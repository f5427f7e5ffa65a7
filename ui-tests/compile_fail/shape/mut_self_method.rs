use rules_runtime::derivative_rule;

struct Buffer(Vec<f32>);

impl Buffer {
    #[derivative_rule(copy)]
    fn fill_from(&mut self, #[src] src: &[f32]) {
        self.0.copy_from_slice(src);
    }
}

fn main() {}
