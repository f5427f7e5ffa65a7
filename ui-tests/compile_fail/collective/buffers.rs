use num_complex::Complex;
use rules_runtime::cudarc::driver::CudaSlice;
use rules_runtime::cudarc::nccl::Comm;
use rules_runtime::derivative_rule;

// Host memory cannot go through NCCL.
#[derivative_rule(all_reduce)]
fn host_buffers(comm: &Comm, #[src] x: &[f32], #[dst] y: &mut Vec<f32>) {
    let _ = (comm, x, y);
}

// Raw pointers, and a memory kind declared for them.
#[derivative_rule(all_gather, dst = device)]
unsafe fn raw_pointers(comm: &Comm, #[src] x: *const f32, #[dst] y: *mut f32) {
    let _ = (comm, x, y);
}

// An immutable output, a mutable input.
#[derivative_rule(reduce_scatter)]
fn mutability(comm: &Comm, #[src] x: &mut CudaSlice<f32>, #[dst] y: &CudaSlice<f32>) {
    let _ = (comm, x, y);
}

// NCCL has no complex type; integers carry no derivative.
#[derivative_rule(all_reduce)]
fn complex(comm: &Comm, #[src] x: &CudaSlice<Complex<f32>>, #[dst] y: &mut CudaSlice<Complex<f32>>) {
    let _ = (comm, x, y);
}

#[derivative_rule(send)]
fn integers(comm: &Comm, #[peer] p: usize, #[src] x: &CudaSlice<i32>) {
    let _ = (comm, p, x);
}

fn main() {}
