//! Region rules on cudarc buffers, ordered on the copy's stream (compiled here; run by the GPU
//! suite).

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use std::sync::Arc;
use rules_runtime::derivative_rule;

/// A pitched upload: host rows into device rows, row by row on the stream.
#[derivative_rule(copy2d)]
fn upload_rows(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    for r in 0..height {
        let (d, s) = (r * dpitch / 4, r * spitch / 4);
        stream.memcpy_htod(&src[s..s + width], &mut dst.slice_mut(d..d + width))?;
    }
    Ok(())
}

/// A fill of device memory from a value held in a one-element device buffer.
#[derivative_rule(fill, restore)]
fn fill_from_device(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    let _ = (stream, dst, v);
    Ok(())
}

/// A memset of device memory.
#[derivative_rule(memset)]
fn zero_device(stream: &Arc<CudaStream>, #[dst] dst: &mut CudaSlice<f32>) -> Result<(), DriverError> {
    stream.memset_zeros(dst)
}

fn main() {}
