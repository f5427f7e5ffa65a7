#![allow(unused_variables)]

use rules_runtime::cudarc::driver::CudaStream;
use rules_runtime::derivative_rule;
use rules_runtime::memory::array::CudaArray;

#[derivative_rule(copy)]
fn no_stream(#[dst] a: &mut CudaArray<f32>, #[src] h: &[f32]) {}

#[derivative_rule(copy2d, src = device)]
unsafe fn pointer_next_to_array(
    s: &CudaStream,
    #[dst] a: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src] p: *const f32,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] r: usize,
) {
}

#[derivative_rule(copy2d)]
fn no_y(
    s: &CudaStream,
    #[dst] h: &mut [f32],
    #[dst_pitch] dp: usize,
    #[src] a: &CudaArray<f32>,
    #[src_x] x: usize,
    #[width] w: usize,
    #[height] r: usize,
) {
}

fn main() {}
