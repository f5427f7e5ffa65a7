//! Raw pointers with a declared memory kind, an offset and a length.
//!
//! A raw pointer cannot say where it points, so the rule's attribute declares the kind
//! (`dst = host`, `src = device`, ...), and generated code builds a [`RawShadow`] from the pointer,
//! the offset and the element count.

pub(crate) mod lanes;
pub(crate) mod rules;
pub(crate) mod unsafe_args;

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
    /// Made for boxes ([`RawShadow::for_boxes`]): only the rows of the boxes the runtime is
    /// given are valid, so host code reaches it row by row, never as one slice.
    rows_only: bool,
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
            rows_only: false,
        })
    }

    /// Describes the elements `base .. base + len` of which only the rows of the boxes the
    /// runtime is given are valid (a pitched buffer whose padding belongs to someone else): host
    /// code reaches them row by row ([`ShadowRead::raw_host_base`]), never as one slice, and
    /// [`ShadowRead::host`] answers an error.
    ///
    /// Returns [`Error::RangeOverflow`] when `len` elements do not fit in the address space.
    ///
    /// # Safety
    /// Every element of every row of every box the runtime is given for this view (boxes checked
    /// against `len`) must be valid for reads and writes of `T` in memory of kind `kind` for as
    /// long as the value is used, and nothing else may access those rows meanwhile; for
    /// device-accessible kinds, as for [`RawShadow::new`].
    pub unsafe fn for_boxes(
        kind: MemoryKind,
        base: *mut T,
        len: usize,
        what: &'static str,
    ) -> Result<Self> {
        // SAFETY: the contract of `new` is only checked for the range's arithmetic here; the
        // elements are reached row by row, as this function's contract says.
        let mut v = unsafe { Self::new(kind, base, 0, len, what)? };
        v.rows_only = true;
        Ok(v)
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
        if self.rows_only {
            return Err(rows_only(self.kind));
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
    fn raw_host_base(&self) -> Option<*mut T> {
        (self.rows_only && self.kind.host_accessible()).then_some(self.ptr)
    }
}

fn rows_only(kind: MemoryKind) -> Error {
    Error::UnsupportedKinds {
        op: "a whole host view",
        dst: kind,
        src: kind,
        why: "a raw view made for boxes is reached row by row only (its padding is not its own)",
    }
}

// SAFETY: as above; exclusive by the contract of `RawShadow::new`.
unsafe impl<T: Differentiable> ShadowMemory for RawShadow<T> {
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        if !self.kind.host_accessible() {
            return Ok(None);
        }
        if self.rows_only {
            return Err(rows_only(self.kind));
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

#[cfg(test)]
mod tests {
    //! The whole-buffer operations on raw views (made here: their constructor is `unsafe`).
    use super::*;
    use crate::error::Error;
    use crate::ops::{On, accumulate, accumulate_and_zero};

    #[test]
    fn raw_device_pointer_without_stream_is_refused() {
        let mut v = vec![1.0f32; 4];
        let mut host = vec![0.0f32; 4];
        // The pointer is never dereferenced: the operation is refused first.
        let mut d =
            unsafe { RawShadow::new(MemoryKind::Device, v.as_mut_ptr(), 0, 4, "d") }.unwrap();
        let e = accumulate_and_zero(On::Host, &mut host, &mut d).unwrap_err();
        assert!(matches!(e, Error::NoStream(_)), "{e}");
        assert_eq!(host, [0.0; 4]);
    }

    #[test]
    fn array_memory_is_refused_before_anything_is_written() {
        let mut v = vec![1.0f32; 4];
        let mut host = vec![0.0f32; 4];
        let mut arr =
            unsafe { RawShadow::new(MemoryKind::Array, v.as_mut_ptr(), 0, 4, "a") }.unwrap();
        let e = accumulate_and_zero(On::Host, &mut host, &mut arr).unwrap_err();
        assert!(matches!(e, Error::UnsupportedKinds { .. }), "{e}");
        assert_eq!((host, v), (vec![0.0; 4], vec![1.0; 4]));
    }

    #[test]
    fn aliasing_is_identity_or_refused() {
        let mut v = vec![1.0f32, 2.0, 3.0, 4.0];
        let p = v.as_mut_ptr();
        unsafe {
            let mut x = RawShadow::new(MemoryKind::Host, p, 0, 3, "x").unwrap();
            let mut same = RawShadow::new(MemoryKind::Host, p, 0, 3, "same").unwrap();
            accumulate_and_zero(On::Host, &mut x, &mut same).unwrap();
            let mut shifted = RawShadow::new(MemoryKind::Host, p, 1, 3, "shifted").unwrap();
            let e = accumulate_and_zero(On::Host, &mut x, &mut shifted).unwrap_err();
            assert!(matches!(e, Error::PartialOverlap { .. }), "{e}");
            accumulate(On::Host, &mut x, &same).unwrap();
        }
        assert_eq!(v, [2.0, 4.0, 6.0, 4.0]);
    }
}
