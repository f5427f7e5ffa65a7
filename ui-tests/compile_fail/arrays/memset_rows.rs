#![allow(unused_variables)]

use rules_runtime::cudarc::driver::CudaStream;
use rules_runtime::derivative_rule;
use rules_runtime::memory::array::CudaArray;

// One row of an array without its height: the rows of a box in an array are placed by its origin,
// not a pitch, so the message names `#[dst_x]` and `#[dst_y]`, never `#[dst_pitch]`.
#[derivative_rule(memset)]
fn one_row(
    s: &CudaStream,
    #[dst] a: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[width] w: usize,
) {
}

// A fill has no source: its rows in an array are placed by the destination's origin.
#[derivative_rule(fill)]
fn fill_with_src_pitch(
    s: &CudaStream,
    #[dst] a: &mut CudaArray<f32>,
    #[value] v: f32,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) {
}

fn main() {}
