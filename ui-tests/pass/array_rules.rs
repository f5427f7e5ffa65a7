//! Copy rules between CUDA arrays and linear memory (compiled here; run by the GPU suite): the
//! array side's box is placed by its origin (`#[dst_x]`, `#[dst_y]`, `#[dst_z]`, or the
//! source's), its layout is the array's own; the linear side has its pitches as in any pitched
//! copy; a plain `copy` moves a whole array.

use rules_runtime::cudarc::driver::sys::{self, CUmemorytype};
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DriverError};
use rules_runtime::derivative_rule;
use rules_runtime::memory::array::CudaArray;
use rules_runtime::memory::raw::RawShadow;
use std::sync::Arc;

/// `cuMemcpy2DAsync` from device rows into an array at `(x, y)`. A safe function that calls the
/// driver checks its own boxes (it may be called directly, not only through its rule).
#[derivative_rule(copy2d)]
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
    let (w, h, _) = dst.extent();
    let row = width * size_of::<f32>();
    // The array's box, and the rows' last byte within `src` (the driver copies what it is told).
    let in_array = x.checked_add(width).is_some_and(|e| e <= w)
        && y.checked_add(height).is_some_and(|e| e <= h);
    let end = (height.max(1) - 1).checked_mul(pitch).and_then(|b| b.checked_add(row));
    let in_src = end.is_some_and(|e| e <= src.len() * size_of::<f32>());
    if !(width == 0 || height == 0 || in_array && in_src && (height == 1 || row <= pitch)) {
        return Err(DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE));
    }
    let (ptr, _sync) = src.device_ptr(stream);
    let c = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: core::ptr::null(),
        srcDevice: ptr,
        srcArray: core::ptr::null_mut(),
        srcPitch: pitch,
        dstXInBytes: x * size_of::<f32>(),
        dstY: y,
        dstMemoryType: CUmemorytype::CU_MEMORYTYPE_ARRAY,
        dstHost: core::ptr::null_mut(),
        dstDevice: 0,
        dstArray: dst.cu_array(),
        dstPitch: 0,
        WidthInBytes: width * size_of::<f32>(),
        Height: height,
    };
    // SAFETY: both boxes were checked above.
    unsafe { sys::cuMemcpy2DAsync_v2(&c, stream.cu_stream()) }.result()
}

/// A 3-D box of an array into host rows (the copy itself is left out here).
#[derivative_rule(copy3d)]
#[allow(clippy::too_many_arguments)]
fn box_to_host(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f64],
    #[dst_pitch] pitch: usize,
    #[dst_slice_height] rows: usize,
    #[src] src: &CudaArray<f64>,
    #[src_x] x: usize,
    #[src_y] y: usize,
    #[src_z] z: usize,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
) -> Result<(), DriverError> {
    let _ = (stream, dst, pitch, rows, src, x, y, z, width, height, depth);
    Ok(())
}

/// Array to array, with `restore`.
#[derivative_rule(copy3d, restore)]
#[allow(clippy::too_many_arguments)]
fn array_to_array(
    #[stream] stream: &CudaStream,
    #[dst] dst: &mut CudaArray<half::f16>,
    #[dst_x] dx: usize,
    #[dst_y] dy: usize,
    #[dst_z] dz: usize,
    #[src] src: &CudaArray<half::f16>,
    #[src_x] sx: usize,
    #[src_y] sy: usize,
    #[src_z] sz: usize,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
) -> Result<(), DriverError> {
    let _ = (stream, dst, dx, dy, dz, src, sx, sy, sz, width, height, depth);
    Ok(())
}

/// Raw linear memory of any kind next to an array: a `RawShadow` by reference.
#[derivative_rule(copy2d)]
#[allow(clippy::too_many_arguments)]
fn raw_to_array(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<num_complex::Complex<f32>>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src] src: &RawShadow<num_complex::Complex<f32>>,
    #[src_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    let _ = (stream, dst, x, y, src.as_ptr(), pitch, width, height);
    Ok(())
}

/// A whole array from host memory: a plain `copy`.
#[derivative_rule(copy)]
fn upload_whole(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    let _ = (stream, dst, src);
    Ok(())
}

/// Generic over the element type.
#[derivative_rule(copy)]
fn download_whole<T: rules_runtime::memory::array::ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [T],
    #[src] src: &CudaArray<T>,
) -> Result<(), DriverError> {
    let _ = (stream, dst, src);
    Ok(())
}

/// A memset of rows of an array (zeroed by copies in the primitive: memset is invalid on arrays).
#[derivative_rule(memset)]
fn zero_rows(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    let _ = (stream, dst, x, y, width, height);
    Ok(())
}

fn main() {
    // Names of the generated rule objects, so that they are used.
    let _ = (rows_to_array_rule, box_to_host_rule);
    let _ = (array_to_array, raw_to_array, upload_whole, download_whole::<f32>, zero_rows);
}
