use rules_runtime::derivative_rule;

struct Copier;

impl Copier {
    #[derivative_rule(copy)]
    fn run(self, #[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }
}

fn main() {}
