use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn with_len(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[len] n: usize,
    #[dst_offset] at: usize,
) {
    dst[at..at + n].copy_from_slice(&src[..n]);
}

fn main() {}
