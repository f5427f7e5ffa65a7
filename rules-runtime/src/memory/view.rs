//! Checked device views: the only way the rest of the runtime names device memory.
//!
//! A [`DevRef`] (readable) or [`DevMut`] (writable) is a device-reachable address with the number
//! of elements behind it, borrowed for `'a` from the buffer it was taken from. They are built here
//! and in the pool (`crate::device::pool`) only:
//! - from a [`ShadowRead`] / [`ShadowMemory`], whose `unsafe` contract says that the address
//!   `device` / `device_mut` hands out holds `len()` elements: the length is read from the same
//!   borrow, at the same moment, so what a launch uses is what the buffer answered;
//! - from pooled memory, whose size the pool knows.
//!
//! The launches in `crate::device` take these views (and boxes, which they check against the
//! views' lengths), so that code which plans and routes (`ops`, `rules`) holds no raw address and
//! needs no `unsafe`.

use super::{DeviceAddr, Region, ShadowMemory, ShadowRead};
use core::marker::PhantomData;
use cudarc::driver::CudaStream;

/// `len` elements of `T` at a device-reachable address, readable by work ordered on the stream
/// the view was taken for, borrowed from their buffer for `'a`.
pub(crate) struct DevRef<'a, T> {
    addr: u64,
    len: usize,
    _guard: Option<DeviceAddr<'a>>,
    _elem: PhantomData<&'a [T]>,
}

/// `len` elements of `T` at a device-reachable address, readable and writable by work ordered on
/// the stream the view was taken for, borrowed exclusively from their buffer for `'a`.
pub(crate) struct DevMut<'a, T> {
    addr: u64,
    len: usize,
    _guard: Option<DeviceAddr<'a>>,
    _elem: PhantomData<&'a mut [T]>,
}

impl<'a, T> DevRef<'a, T> {
    /// The device view of `m` for work on `stream`; `None` for memory kernels cannot reach.
    pub(crate) fn of<M>(m: &'a M, stream: &'a CudaStream) -> Option<Self>
    where
        M: ShadowRead<Elem = T> + ?Sized,
    {
        let d = m.device(stream)?;
        Some(DevRef {
            addr: d.addr(),
            len: m.len(),
            _guard: Some(d),
            _elem: PhantomData,
        })
    }

    /// # Safety
    /// `addr` holds `len` elements of `T` readable by work on the stream the view is used with,
    /// for `'a`.
    pub(crate) unsafe fn from_raw(addr: u64, len: usize) -> Self {
        DevRef {
            addr,
            len,
            _guard: None,
            _elem: PhantomData,
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The device address (for launches in `crate::device` only).
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// The byte range, for overlap checks.
    pub(crate) fn region(&self) -> Region {
        Region::of::<T>(self.addr, self.len)
    }
}

impl<'a, T> DevMut<'a, T> {
    /// The writable device view of `m` for work on `stream`; `None` for memory kernels cannot
    /// reach.
    pub(crate) fn of<M>(m: &'a mut M, stream: &'a CudaStream) -> Option<Self>
    where
        M: ShadowMemory<Elem = T> + ?Sized,
    {
        let len = m.len();
        let d = m.device_mut(stream)?;
        Some(DevMut {
            addr: d.addr(),
            len,
            _guard: Some(d),
            _elem: PhantomData,
        })
    }

    /// As [`Self::of`], without cudarc's guard: the work enqueued on the view is not recorded on
    /// the buffer. Only for callers that wait for all of that work before returning.
    pub(crate) fn unguarded<M>(m: &'a mut M, stream: &'a CudaStream) -> Option<Self>
    where
        M: ShadowMemory<Elem = T> + ?Sized,
    {
        let len = m.len();
        let addr = m.device_mut(stream)?.unguarded();
        Some(DevMut {
            addr,
            len,
            _guard: None,
            _elem: PhantomData,
        })
    }

    /// # Safety
    /// `addr` holds `len` elements of `T` readable and writable by work on the stream the view
    /// is used with, for `'a`, and nothing else uses them meanwhile.
    pub(crate) unsafe fn from_raw(addr: u64, len: usize) -> Self {
        DevMut {
            addr,
            len,
            _guard: None,
            _elem: PhantomData,
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The device address (for launches in `crate::device` only).
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// The byte range, for overlap checks.
    pub(crate) fn region(&self) -> Region {
        Region::of::<T>(self.addr, self.len)
    }
}
