use rules_runtime::derivative_rule;

#[derivative_rule(copy, rul = tangent)]
async fn everything_wrong(#[dest] dst: &[i32], #[src] src: &mut [f32], #[len] n: usize) -> usize {
    let _ = (dst, src);
    n
}

fn main() {}
