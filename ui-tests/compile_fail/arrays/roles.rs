#![allow(unused_variables)]

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream};
use rules_runtime::derivative_rule;
use rules_runtime::memory::array::CudaArray;

#[derivative_rule(copy2d)]
fn pitch_on_array(
    s: &CudaStream,
    #[dst] a: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[dst_pitch] dp: usize,
    #[src] h: &[f32],
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] r: usize,
) {
}

#[derivative_rule(copy3d)]
fn slice_height_on_array(
    s: &CudaStream,
    #[dst] h: &mut [f32],
    #[dst_pitch] dp: usize,
    #[dst_slice_height] dr: usize,
    #[src] a: &CudaArray<f32>,
    #[src_x] x: usize,
    #[src_y] y: usize,
    #[src_z] z: usize,
    #[src_slice_height] sr: usize,
    #[width] w: usize,
    #[height] r: usize,
    #[depth] d: usize,
) {
}

#[derivative_rule(copy3d)]
fn no_z(
    s: &CudaStream,
    #[dst] a: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src] h: &[f32],
    #[src_pitch] sp: usize,
    #[src_slice_height] sr: usize,
    #[width] w: usize,
    #[height] r: usize,
    #[depth] d: usize,
) {
}

#[derivative_rule(copy2d)]
fn z_on_2d(
    s: &CudaStream,
    #[dst] a: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[dst_z] z: usize,
    #[src] h: &[f32],
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] r: usize,
) {
}

#[derivative_rule(copy2d)]
fn origin_on_linear(
    s: &CudaStream,
    #[dst] a: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src] h: &CudaSlice<f32>,
    #[src_x] sx: usize,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] r: usize,
) {
}

#[derivative_rule(copy)]
fn origin_on_copy(s: &CudaStream, #[dst] a: &mut CudaArray<f32>, #[dst_x] x: usize, #[src] h: &[f32]) {}

#[derivative_rule(copy2d)]
fn origin_in_bytes(
    s: &CudaStream,
    #[dst] a: &mut CudaArray<f32>,
    #[dst_x] x: u32,
    #[dst_y] y: usize,
    #[src] h: &[f32],
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] r: usize,
) {
}

fn main() {}
