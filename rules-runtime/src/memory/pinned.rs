//! Pinned (page-locked) host memory: cudarc's `PinnedHostSlice<T>`.
//!
//! With unified addressing (every 64-bit CUDA platform), pinned memory is reachable from kernels
//! at its host address, so device work reads and writes it directly, ordered on the stream; host
//! work first waits for the work pending on it.

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory};
use crate::cuda::driver;
use crate::element::Differentiable;
use crate::error::Result;
use cudarc::driver::{CudaContext, CudaStream, HostSlice, PinnedHostSlice, ValidAsZeroBits};
use std::sync::Arc;

impl<T: Differentiable + ValidAsZeroBits> ShadowMemory for PinnedHostSlice<T> {
    type Elem = T;
    fn kind(&self) -> MemoryKind {
        MemoryKind::Pinned
    }
    fn len(&self) -> usize {
        PinnedHostSlice::len(self)
    }
    fn region(&self) -> Region {
        let stream = self.context().per_thread_stream();
        // SAFETY: only the address is kept; the slice is not read.
        let (slice, guard) = unsafe { self.stream_synced_slice(&stream) };
        let addr = slice.as_ptr() as u64;
        core::mem::forget(guard);
        Region::of::<T>(addr, PinnedHostSlice::len(self))
    }
    fn context(&self) -> Option<&Arc<CudaContext>> {
        Some(PinnedHostSlice::context(self))
    }
    fn host(&self) -> Result<Option<&[T]>> {
        self.as_slice()
            .map(Some)
            .map_err(driver("cuEventSynchronize (pinned buffer)"))
    }
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        self.as_mut_slice()
            .map(Some)
            .map_err(driver("cuEventSynchronize (pinned buffer)"))
    }
    fn device<'a>(&'a self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        // SAFETY: the address is used only by work ordered on `stream`.
        let (slice, sync) = unsafe { self.stream_synced_slice(stream) };
        Some(DeviceAddr::guarded(slice.as_ptr() as u64, sync))
    }
    fn device_mut<'a>(&'a mut self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        // SAFETY: the address is used only by work ordered on `stream`.
        let (slice, sync) = unsafe { self.stream_synced_mut_slice(stream) };
        Some(DeviceAddr::guarded(slice.as_mut_ptr() as u64, sync))
    }
}
