use rules_runtime::derivative_rule;

#[derivative_rule(allgather)]
fn nccl_spelling(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(peer_copy)]
fn peer(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(all_gathr)]
fn typo(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {}
