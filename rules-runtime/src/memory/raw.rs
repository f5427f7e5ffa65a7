//! Raw pointers with a declared memory kind, an offset and a length.
//!
//! A raw pointer cannot say where it points, so the rule's attribute declares the kind
//! (`dst = host`, `src = device`, ...), and generated code builds a [`RawShadow`] from the pointer,
//! the offset and the element count.

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory, ShadowRead};
use crate::element::Differentiable;
use crate::error::{Error, Result};
use cudarc::driver::CudaStream;

/// `len` elements at `base + offset`, in memory of a declared kind.
#[derive(Debug)]
pub struct RawShadow<T> {
    kind: MemoryKind,
    ptr: *mut T,
    len: usize,
}

impl<T: Differentiable> RawShadow<T> {
    /// Describes `len` elements starting `offset` elements past `base`.
    ///
    /// Returns [`Error::RangeOverflow`] when `offset + len` elements do not fit in the address space.
    ///
    /// # Safety
    /// `base + offset .. base + offset + len` must be valid for reads and writes of `T` in memory of
    /// kind `kind` for as long as the value is used, and nothing else may access it meanwhile; for
    /// device-accessible kinds, the address must be reachable from the device of the stream the
    /// work is ordered on, and pending work on it must already be ordered before that stream.
    pub unsafe fn new(
        kind: MemoryKind,
        base: *mut T,
        offset: usize,
        len: usize,
        what: &'static str,
    ) -> Result<Self> {
        let end = offset
            .checked_add(len)
            .and_then(|e| e.checked_mul(size_of::<T>()));
        let fits = end.is_some_and(|bytes| (base as u64).checked_add(bytes as u64).is_some());
        if !fits || (len > 0 && base.is_null()) {
            return Err(Error::RangeOverflow { what, offset, len });
        }
        // In bounds by the caller's contract; wrapping_add avoids UB on the arithmetic itself.
        Ok(RawShadow {
            kind,
            ptr: base.wrapping_add(offset),
            len,
        })
    }

    /// The first element's address.
    pub fn as_ptr(&self) -> *mut T {
        self.ptr
    }
}

// SAFETY: the range is valid for the declared kind by the contract of `RawShadow::new`.
unsafe impl<T: Differentiable> ShadowRead for RawShadow<T> {
    type Elem = T;
    fn kind(&self) -> MemoryKind {
        self.kind
    }
    fn len(&self) -> usize {
        self.len
    }
    fn region(&self) -> Region {
        Region::of::<T>(self.ptr as u64, self.len)
    }
    fn host(&self) -> Result<Option<&[T]>> {
        if !self.kind.host_accessible() {
            return Ok(None);
        }
        if self.len == 0 {
            return Ok(Some(&[]));
        }
        // SAFETY: valid for `len` reads by the contract of `new`.
        Ok(Some(unsafe {
            core::slice::from_raw_parts(self.ptr, self.len)
        }))
    }
    fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        // SAFETY: reachable from the device for device-accessible kinds, by the contract of `new`.
        self.kind
            .device_accessible()
            .then(|| unsafe { DeviceAddr::new(self.ptr as u64) })
    }
}

// SAFETY: as above; exclusive by the contract of `RawShadow::new`.
unsafe impl<T: Differentiable> ShadowMemory for RawShadow<T> {
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        if !self.kind.host_accessible() {
            return Ok(None);
        }
        if self.len == 0 {
            return Ok(Some(&mut []));
        }
        // SAFETY: valid and exclusive for `len` writes by the contract of `new`.
        Ok(Some(unsafe {
            core::slice::from_raw_parts_mut(self.ptr, self.len)
        }))
    }
    fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        // SAFETY: as in `device`.
        self.kind
            .device_accessible()
            .then(|| unsafe { DeviceAddr::new(self.ptr as u64) })
    }
}
