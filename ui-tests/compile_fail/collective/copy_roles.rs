use rules_runtime::cudarc::driver::{CudaSlice, CudaStream};
use rules_runtime::cudarc::nccl::Comm;
use rules_runtime::derivative_rule;

// Lengths and streams belong to copies.
#[derivative_rule(all_reduce)]
fn copy_roles(
    comm: &Comm,
    #[stream] s: &CudaStream,
    #[len] n: usize,
    #[src] x: &CudaSlice<f32>,
    #[dst] y: &mut CudaSlice<f32>,
) {
    let _ = (comm, s, n, x, y);
}

// Ranks and communicators belong to collectives.
#[derivative_rule(copy)]
fn copy_with_root(#[comm] c: &Comm, #[root] r: usize, #[dst] dst: &mut [f32], #[src] src: &[f32]) {
    let _ = (c, r);
    dst.copy_from_slice(src);
}

fn main() {}
