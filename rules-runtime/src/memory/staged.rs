//! Pooled device memory seen as a memory kind: a box staged out of a CUDA array, on which the
//! region operations run as on any buffer.

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory, ShadowRead};
use crate::driver::pool::{Lease, Memory};
use crate::element::Differentiable;
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// Pooled device memory of `n` elements of `T` under a [`Lease`], seen as a shadow (device memory
/// of the lease's context).
pub(crate) struct Staged<'s, T> {
    lease: Lease<'s>,
    n: usize,
    _elem: core::marker::PhantomData<T>,
}

impl<'s, T: Differentiable> Staged<'s, T> {
    /// `n` elements of pooled device memory on `stream`'s context, for work on `stream`.
    pub(crate) fn new(n: usize, stream: &'s CudaStream) -> Result<Self> {
        let bytes = n.checked_mul(size_of::<T>()).ok_or(Error::RangeOverflow {
            what: "a staged box",
            offset: 0,
            len: n,
        })?;
        Ok(Staged {
            lease: Lease::new(Memory::Device, bytes, stream, stream)?,
            n,
            _elem: core::marker::PhantomData,
        })
    }
}

// SAFETY: the lease holds at least `n` elements of `T` (made so by `Staged::new`) of device memory
// of the lease's context, 256-byte aligned, exclusively ours until the lease drops; its previous
// use is ordered before the stream's work by the lease; no host view is handed out.
unsafe impl<T: Differentiable> ShadowRead for Staged<'_, T> {
    type Elem = T;
    fn kind(&self) -> MemoryKind {
        MemoryKind::Device
    }
    fn len(&self) -> usize {
        self.n
    }
    fn region(&self) -> Region {
        Region::of::<T>(self.lease.ptr(), self.n)
    }
    fn context(&self) -> Option<&Arc<CudaContext>> {
        Some(self.lease.context())
    }
    fn host(&self) -> Result<Option<&[T]>> {
        Ok(None)
    }
    fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        // SAFETY: see the impl.
        Some(unsafe { DeviceAddr::new(self.lease.ptr()) })
    }
}

// SAFETY: as above; `&mut self` makes the writer the only user.
unsafe impl<T: Differentiable> ShadowMemory for Staged<'_, T> {
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        Ok(None)
    }
    fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        // SAFETY: see the impl of `ShadowRead`.
        Some(unsafe { DeviceAddr::new(self.lease.ptr()) })
    }
}
