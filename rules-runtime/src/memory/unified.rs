//! Unified (managed) memory: cudarc's `UnifiedSlice<T>`, reachable from host and device.

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory};
use crate::cuda::driver;
use crate::element::Differentiable;
use crate::error::Result;
use cudarc::driver::{
    CudaContext, CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, UnifiedSlice, ValidAsZeroBits,
};
use std::sync::Arc;

impl<T: Differentiable + ValidAsZeroBits> ShadowMemory for UnifiedSlice<T> {
    type Elem = T;
    fn kind(&self) -> MemoryKind {
        MemoryKind::Unified
    }
    fn len(&self) -> usize {
        DeviceSlice::len(self)
    }
    fn region(&self) -> Region {
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
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        self.as_mut_slice()
            .map(Some)
            .map_err(driver("host access to unified memory"))
    }
    fn device<'a>(&'a self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        let (addr, sync) = self.device_ptr(stream);
        Some(DeviceAddr::guarded(addr, sync))
    }
    fn device_mut<'a>(&'a mut self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        let (addr, sync) = self.device_ptr_mut(stream);
        Some(DeviceAddr::guarded(addr, sync))
    }
}
