//! The driver's box copy (`cuMemcpy3DAsync`) between two boxes, each in host memory, in the
//! unified address space or in a CUDA array.

use super::{Shape, bind, empty};
use crate::driver::driver;
use crate::error::Result;
use cudarc::driver::{CudaStream, sys};

/// Where one side of a box copy is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum At {
    /// Memory the host reaches only by itself (pageable, or pinned used from the host).
    Host(u64),
    /// A unified-address-space pointer the driver classifies (device, managed, pinned).
    Unified(u64),
    /// A CUDA array, from element `(x, y, z)`; the side's strides are ignored.
    Array {
        handle: sys::CUarray,
        x: usize,
        y: usize,
        z: usize,
    },
}

/// Copies a box of `shape` elements of `size` bytes from `src` (strides in elements) into `dst`,
/// with `cuMemcpy3DAsync` on `stream`.
///
/// # Safety
/// Both boxes valid for the copy; a pageable host side is read or written before the call
/// returns, a pinned one when the stream reaches the copy.
pub(crate) unsafe fn copy_box(
    stream: &CudaStream,
    size: usize,
    (dst, dst_row, dst_slice): (At, u64, u64),
    (src, src_row, src_slice): (At, u64, u64),
    shape: Shape,
) -> Result<()> {
    if empty(shape) {
        return Ok(());
    }
    let size = size as u64;
    let (w, h, d) = shape;
    let height = |row: u64, slice: u64| slice.checked_div(row).unwrap_or(h).max(h) as usize;
    let pitch = |row: u64| (row.max(w) * size) as usize;
    // (memory type, host pointer, device pointer, array, x in bytes, y, z) of one side.
    let place = |at: At| match at {
        At::Host(p) => (
            sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            p,
            0,
            core::ptr::null_mut(),
            0,
            0,
            0,
        ),
        At::Unified(p) => (
            sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED,
            0,
            p,
            core::ptr::null_mut(),
            0,
            0,
            0,
        ),
        At::Array { handle, x, y, z } => (
            sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
            0,
            0,
            handle,
            x * size as usize,
            y,
            z,
        ),
    };
    let (src_type, src_host, src_device, src_array, src_x, src_y, src_z) = place(src);
    let (dst_type, dst_host, dst_device, dst_array, dst_x, dst_y, dst_z) = place(dst);
    // Every field written out: the memory-type enum has no zero value, so the struct has no
    // all-zero default.
    let c = sys::CUDA_MEMCPY3D {
        srcXInBytes: src_x,
        srcY: src_y,
        srcZ: src_z,
        srcLOD: 0,
        srcMemoryType: src_type,
        srcHost: src_host as *const core::ffi::c_void,
        srcDevice: src_device,
        srcArray: src_array,
        reserved0: core::ptr::null_mut(),
        srcPitch: pitch(src_row),
        srcHeight: height(src_row, src_slice),
        dstXInBytes: dst_x,
        dstY: dst_y,
        dstZ: dst_z,
        dstLOD: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host as *mut core::ffi::c_void,
        dstDevice: dst_device,
        dstArray: dst_array,
        reserved1: core::ptr::null_mut(),
        dstPitch: pitch(dst_row),
        dstHeight: height(dst_row, dst_slice),
        WidthInBytes: (w * size) as usize,
        Height: h as usize,
        Depth: d as usize,
    };
    bind(stream)?;
    // SAFETY: `c` describes two valid boxes by the caller's contract.
    unsafe { sys::cuMemcpy3DAsync_v2(&c, stream.cu_stream()) }
        .result()
        .map_err(driver("cuMemcpy3DAsync (region staging)"))
}
