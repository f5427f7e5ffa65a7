//! Unified (managed) memory: cudarc's `UnifiedSlice<T>`, reachable from host and device.

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory, ShadowRead};
use crate::driver::driver;
use crate::driver::pool;
use crate::element::Differentiable;
use crate::error::Result;
use cudarc::driver::{
    CudaContext, CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, UnifiedSlice, ValidAsZeroBits,
};
use std::sync::Arc;

// SAFETY: cudarc's length and address of the allocation, ordered by cudarc's guards.
unsafe impl<T: Differentiable + ValidAsZeroBits> ShadowRead for UnifiedSlice<T> {
    type Elem = T;
    fn kind(&self) -> MemoryKind {
        MemoryKind::Unified
    }
    fn len(&self) -> usize {
        DeviceSlice::len(self)
    }
    fn region(&self) -> Region {
        // cudarc may bind the buffer's context on the way: the caller's current context stays.
        let _current = pool::CurrentContext::save();
        let (addr, guard) = self.device_ptr(DeviceSlice::stream(self));
        core::mem::forget(guard);
        Region::of::<T>(addr, DeviceSlice::len(self))
    }
    fn home_stream(&self) -> Option<&Arc<CudaStream>> {
        Some(DeviceSlice::stream(self))
    }
    fn context(&self) -> Option<&Arc<CudaContext>> {
        Some(DeviceSlice::stream(self).context())
    }
    fn host(&self) -> Result<Option<&[T]>> {
        self.as_slice()
            .map(Some)
            .map_err(driver("host access to unified memory"))
    }
    fn device<'a>(&'a self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        let (addr, sync) = self.device_ptr(stream);
        Some(DeviceAddr::guarded(addr, sync))
    }
}

// SAFETY: as above.
unsafe impl<T: Differentiable + ValidAsZeroBits> ShadowMemory for UnifiedSlice<T> {
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        self.as_mut_slice()
            .map(Some)
            .map_err(driver("host access to unified memory"))
    }
    fn device_mut<'a>(&'a mut self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        let (addr, sync) = self.device_ptr_mut(stream);
        Some(DeviceAddr::guarded(addr, sync))
    }
}
