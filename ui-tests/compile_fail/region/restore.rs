#![allow(unused_variables)]

use rules_runtime::cudarc::driver::CudaSlice;
use rules_runtime::cudarc::nccl::Comm;
use rules_runtime::derivative_rule;

#[derivative_rule(all_reduce, restore)]
fn restored_collective(comm: &Comm, #[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>) {}

#[derivative_rule(fill, restore, restore)]
fn restored_twice(#[dst] d: &mut [f32], #[value] v: f32) {}

fn main() {}
