//! Rules over CUDA memory, through the runtime's `cudarc` re-export: cudarc buffers and views
//! (with elided lifetimes), streams found by type or marked `#[stream]`, raw device pointers.
//! Compiled only: `main` needs no GPU.
#![allow(dead_code)]

use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, CudaViewMut, DriverError, PinnedHostSlice, UnifiedSlice, sys,
};
use rules_runtime::derivative_rule;
use std::sync::Arc;

/// Device → device between views; the stream is found by its type. The source is a writable
/// view (a read-only `CudaView` cannot hold the shadow the reverse pass accumulates into).
#[derivative_rule(copy)]
fn view_copy<'v>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaViewMut<'v, f32>,
    #[src] src: &CudaViewMut<'v, f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// Host → device; the stream is marked, and comes last.
#[derivative_rule(copy)]
fn upload(
    #[dst] dst: &mut CudaSlice<f64>,
    #[src] src: &Vec<f64>,
    #[stream] on: &Arc<CudaStream>,
) -> Result<(), DriverError> {
    on.memcpy_htod(src, dst)
}

/// Unified → pinned, named lifetimes.
#[derivative_rule(copy)]
fn stage<'a>(
    stream: &'a Arc<CudaStream>,
    #[dst] dst: &'a mut PinnedHostSlice<f32>,
    #[src] src: &'a UnifiedSlice<f32>,
) -> Result<(), DriverError> {
    stream.synchronize()?;
    dst.as_mut_slice()?.copy_from_slice(src.as_slice()?);
    Ok(())
}

/// Raw device pointers at offsets, on a plain `&CudaStream`.
#[derivative_rule(copy, dst = device, src = device)]
unsafe fn raw_d2d(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    let d = dst as u64 + (at * size_of::<f32>()) as u64;
    unsafe {
        sys::cuMemcpyDtoDAsync_v2(d, src as u64, n * size_of::<f32>(), stream.cu_stream()).result()
    }
}

fn main() {
    // Name every generated rule object (their trait impls are type-checked where they are made).
    let _ = (view_copy_rule, upload_rule, stage_rule, raw_d2d_rule);
}
