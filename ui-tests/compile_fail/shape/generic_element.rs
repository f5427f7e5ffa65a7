use rules_runtime::CopyRule;
use rules_runtime::derivative_rule;

// Generic element types are supported, but the element must be differentiable: an unbounded `T`
// is reported at the element, with the bound to add.
#[derivative_rule(copy)]
fn generic<T: Copy>(#[dst] dst: &mut [T], #[src] src: &[T]) {
    dst.copy_from_slice(src);
}

fn main() {
    let x = [1u8; 4];
    let mut y = [0u8; 4];
    let _ = generic_rule().forward(
        rules_runtime::Const(&mut y[..]),
        rules_runtime::Const(&x[..]),
    );
}
