#![allow(unused_variables)]

use rules_runtime::cudarc::nccl::Comm;
use rules_runtime::cudarc::driver::CudaSlice;
use rules_runtime::derivative_rule;

// A pitch on a plain copy of slices: the copy moves one run, the pitch would be ignored.
#[derivative_rule(copy)]
fn pitched_plain_copy(#[dst] d: &mut [f32], #[src] s: &[f32], #[dst_pitch] dp: usize) {}

#[derivative_rule(copy)]
fn slices_on_plain_copy(#[dst] d: &mut [f32], #[src] s: &[f32], #[depth] z: usize) {}

#[derivative_rule(memset)]
fn memset_src_pitch(#[dst] d: &mut [f32], #[width] w: usize, #[height] h: usize, #[dst_pitch] dp: usize, #[src_pitch] sp: usize) {}

#[derivative_rule(memset)]
fn memset_half_rows(#[dst] d: &mut [f32], #[width] w: usize, #[height] h: usize) {}

#[derivative_rule(fill)]
fn fill_depth(#[dst] d: &mut [f32], #[value] v: f32, #[depth] z: usize) {}

#[derivative_rule(memset, dst = device)]
unsafe fn memset_ptr_no_extent(stream: &rules_runtime::cudarc::driver::CudaStream, #[dst] d: *mut f32, #[value] byte: u8) {}

#[derivative_rule(all_reduce)]
fn collective_rows(comm: &Comm, #[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>, #[width] w: usize) {}

fn main() {}
