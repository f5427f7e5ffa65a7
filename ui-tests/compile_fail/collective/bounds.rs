use num_complex::Complex;
use rules_runtime::CollectiveRule;
use rules_runtime::cudarc::driver::{CudaSlice, PinnedHostSlice};
use rules_runtime::cudarc::nccl::Comm;
use rules_runtime::{Const, derivative_rule};

// What the macro cannot see is a trait bound at the argument's type.
#[derivative_rule(broadcast)]
fn not_a_comm(
    #[comm] c: &u32,
    #[root] root: String,
    #[src] x: &CudaSlice<f32>,
    #[dst] y: &mut CudaSlice<f32>,
) {
    let _ = (c, root, x, y);
}

#[derivative_rule(all_reduce)]
fn pinned(comm: &Comm, #[src] x: &PinnedHostSlice<f32>, #[dst] y: &mut PinnedHostSlice<f32>) {
    let _ = (comm, x, y);
}

// A generic element is bounded where the rule is called.
#[derivative_rule(all_gather)]
fn generic<T: rules_runtime::Differentiable>(
    comm: &Comm,
    #[src] x: &CudaSlice<T>,
    #[dst] y: &mut CudaSlice<T>,
) {
    let _ = (comm, x, y);
}

fn call_generic(comm: &Comm, x: &CudaSlice<Complex<f64>>, y: &mut CudaSlice<Complex<f64>>) {
    let _ = generic_rule(comm).forward(Const(y), Const(x));
}

fn main() {}
