//! Page-locked and unified buffers made from host data, for `testing`'s buffers. cudarc
//! allocates both uninitialised (its allocating calls are `unsafe` for that reason): here each
//! is written in full before anything can read it, so the safe functions hand out only
//! initialised memory.

use crate::cuda::driver;
use crate::element::Differentiable;
use crate::error::Result;
use cudarc::driver::{CudaStream, DeviceRepr, PinnedHostSlice, UnifiedSlice, ValidAsZeroBits};
use std::sync::Arc;

/// Page-locked host memory of `stream`'s context holding `data`.
pub(crate) fn pinned<T>(stream: &Arc<CudaStream>, data: &[T]) -> Result<PinnedHostSlice<T>>
where
    T: Differentiable + DeviceRepr + ValidAsZeroBits,
{
    // SAFETY: the allocation is written in full below, before it is handed out or read.
    let mut p = unsafe { stream.context().alloc_pinned::<T>(data.len()) }
        .map_err(driver("cuMemHostAlloc"))?;
    let dst = p.as_mut_ptr().map_err(driver("cuEventSynchronize"))?;
    // SAFETY: `dst` is the allocation's start, valid for `data.len()` elements of `T`, and a
    // fresh allocation cannot overlap `data`.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    Ok(p)
}

/// Unified (managed) memory of `stream`'s context holding `data`, attached globally.
pub(crate) fn unified<T>(stream: &Arc<CudaStream>, data: &[T]) -> Result<UnifiedSlice<T>>
where
    T: Differentiable + DeviceRepr + ValidAsZeroBits,
{
    // SAFETY: the allocation is written in full (the copy below) before it is handed out; the
    // copy is ordered on `stream`, and readers synchronise with it through cudarc's events.
    let mut u = unsafe { stream.context().alloc_unified::<T>(data.len(), true) }
        .map_err(driver("cuMemAllocManaged"))?;
    stream
        .memcpy_htod(data, &mut u)
        .map_err(driver("cuMemcpyHtoDAsync"))?;
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize"))?;
    Ok(u)
}
