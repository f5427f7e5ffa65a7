//! Pinned (page-locked) host memory: cudarc's `PinnedHostSlice<T>`.
//!
//! With unified addressing (every 64-bit CUDA platform), pinned memory is reachable from kernels
//! at its host address, so device work reads and writes it directly, ordered on the stream; host
//! work first waits for the work pending on it.

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory, ShadowRead};
use crate::driver::driver;
use crate::driver::pool;
use crate::element::Differentiable;
use crate::error::Result;
use cudarc::driver::{CudaContext, CudaStream, HostSlice, PinnedHostSlice, ValidAsZeroBits};
use std::sync::Arc;

// SAFETY: cudarc's length and address of the allocation, ordered by cudarc's event.
unsafe impl<T: Differentiable + ValidAsZeroBits> ShadowRead for PinnedHostSlice<T> {
    type Elem = T;
    fn kind(&self) -> MemoryKind {
        MemoryKind::Pinned
    }
    fn len(&self) -> usize {
        PinnedHostSlice::len(self)
    }
    fn region(&self) -> Region {
        let len = PinnedHostSlice::len(self);
        // cudarc gives the address only with a wait for pending work: asked against a stream
        // that nothing uses, with the thread's current context restored, it has no effect.
        let addr = pool::with_idle_stream(PinnedHostSlice::context(self), |s| {
            // SAFETY: only the address is kept; the slice is not read.
            let (slice, guard) = unsafe { self.stream_synced_slice(s) };
            let addr = slice.as_ptr() as u64;
            // Nothing was enqueued: there is nothing for the guard to record.
            core::mem::forget(guard);
            addr
        });
        // Without a working driver no address can be had, and no work can run either: an empty
        // region overlaps nothing.
        addr.map_or(Region { start: 0, end: 0 }, |a| Region::of::<T>(a, len))
    }
    fn context(&self) -> Option<&Arc<CudaContext>> {
        Some(PinnedHostSlice::context(self))
    }
    fn host(&self) -> Result<Option<&[T]>> {
        self.as_slice()
            .map(Some)
            .map_err(driver("cuEventSynchronize (pinned buffer)"))
    }
    fn device<'a>(&'a self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        // SAFETY: the address is used only by work ordered on `stream`.
        let (slice, sync) = unsafe { self.stream_synced_slice(stream) };
        Some(DeviceAddr::guarded(slice.as_ptr() as u64, sync))
    }
}

// SAFETY: as above.
unsafe impl<T: Differentiable + ValidAsZeroBits> ShadowMemory for PinnedHostSlice<T> {
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        self.as_mut_slice()
            .map(Some)
            .map_err(driver("cuEventSynchronize (pinned buffer)"))
    }
    fn device_mut<'a>(&'a mut self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        // SAFETY: the address is used only by work ordered on `stream`.
        let (slice, sync) = unsafe { self.stream_synced_mut_slice(stream) };
        Some(DeviceAddr::guarded(slice.as_mut_ptr() as u64, sync))
    }
}
