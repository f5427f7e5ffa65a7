//! Device memory: cudarc's `CudaSlice<T>`, `CudaView<'_, T>` and `CudaViewMut<'_, T>`.
//!
//! Addresses come from cudarc's `DevicePtr`/`DevicePtrMut`, whose guards order the work against
//! the buffer's other streams (cudarc's event tracking). A `CudaView` is read-only
//! ([`ShadowRead`]): cudarc gives no writable address for it, and other views of the same memory
//! may be read meanwhile. It can be a rule's source, with writable shadows (`crate::SrcArg`).

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory, ShadowRead};
use crate::driver::pool;
use crate::element::Differentiable;
use crate::error::Result;
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceSlice,
};
use std::sync::Arc;

/// The address of a device buffer, without enqueuing anything that outlives the call.
fn address<T, B: DevicePtr<T>>(buf: &B) -> u64 {
    let _p = crate::driver::probe::span("address of a cudarc buffer (region, guard)");
    // cudarc may bind the buffer's context on the way: the caller's current context stays.
    let _current = pool::CurrentContext::save();
    let (addr, guard) = buf.device_ptr(buf.stream());
    // No work was enqueued on the buffer: there is nothing for the guard to record.
    core::mem::forget(guard);
    addr
}

macro_rules! device_memory {
    ($(impl[$($g:tt)*] $t:ty, mut: $m:tt;)*) => {$(
        // SAFETY: cudarc's length and address of the buffer, ordered by cudarc's guard.
        unsafe impl<$($g)*> ShadowRead for $t {
            type Elem = T;
            fn kind(&self) -> MemoryKind {
                MemoryKind::Device
            }
            fn len(&self) -> usize {
                DeviceSlice::len(self)
            }
            fn region(&self) -> Region {
                Region::of::<T>(address(self), DeviceSlice::len(self))
            }
            fn home_stream(&self) -> Option<&Arc<CudaStream>> {
                Some(DeviceSlice::stream(self))
            }
            fn context(&self) -> Option<&Arc<CudaContext>> {
                Some(DeviceSlice::stream(self).context())
            }
            fn host(&self) -> Result<Option<&[T]>> {
                Ok(None)
            }
            fn device<'a>(&'a self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
                let (addr, sync) = self.device_ptr(stream);
                Some(DeviceAddr::guarded(addr, sync))
            }
        }
        device_memory!(@mut $m [$($g)*] $t);
    )*};
    (@mut yes [$($g:tt)*] $t:ty) => {
        // SAFETY: cudarc's writable address of the buffer, ordered by cudarc's guard.
        unsafe impl<$($g)*> ShadowMemory for $t {
            fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
                Ok(None)
            }
            fn device_mut<'a>(&'a mut self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
                let (addr, sync) = self.device_ptr_mut(stream);
                Some(DeviceAddr::guarded(addr, sync))
            }
        }
    };
    (@mut no [$($g:tt)*] $t:ty) => {};
}

device_memory! {
    impl[T: Differentiable] CudaSlice<T>, mut: yes;
    impl['v, T: Differentiable] CudaViewMut<'v, T>, mut: yes;
    impl['v, T: Differentiable] CudaView<'v, T>, mut: no;
}
