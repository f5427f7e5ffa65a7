use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::memory::array::CudaArray;
use rules_runtime::derivative_rule;
use std::sync::Arc;

// Bridged: pointer `copy`, `copy2d`, `copy3d`, `memset` and `fill` rules, and rules with a CUDA
// array side. Not: a slice rule (Enzyme passes raw pointers), an array rule whose linear side is
// a `CudaSlice` (no handle makes one), a collective (ordered by a communicator).
#[derivative_rule(memset, autodiff)]
fn clear(#[dst] dst: &mut [f32]) {
    dst.fill(0.0);
}

#[derivative_rule(copy2d, autodiff)]
fn rows_to_array(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src] src: &CudaSlice<f32>,
    #[src_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    let _ = (stream, dst, x, y, src, pitch, width, height);
    Ok(())
}

#[derivative_rule(copy, autodiff)]
fn copy_slice(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(all_reduce, autodiff)]
fn sum_all(
    comm: &rules_runtime::cudarc::nccl::Comm,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), rules_runtime::cudarc::nccl::result::NcclError> {
    let _ = (comm, dst, src);
    Ok(())
}

fn main() {}
