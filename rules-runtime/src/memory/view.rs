//! Checked device views: the only way the rest of the runtime names device memory.
//!
//! A [`DevRef`] (readable) or [`DevMut`] (writable) is a device-reachable address with the number
//! of elements behind it, borrowed for `'a` from the buffer it was taken from. They are built here
//! and on the pool's buffers (`crate::driver::pool`) only:
//! - from a [`ShadowRead`] / [`ShadowMemory`], whose `unsafe` contract says that the address
//!   `device` / `device_mut` hands out holds `len()` elements: the length is read from the same
//!   borrow, at the same moment, so what a launch uses is what the buffer answered;
//! - from pooled memory, whose size the pool knows.
//!
//! The launches in `crate::device` take these views (and boxes, which they check against the
//! views' lengths), so that code which plans and routes (`ops`, `rules`) holds no raw address and
//! needs no `unsafe`.

use super::{DeviceAddr, Region, ShadowMemory, ShadowRead};
use crate::driver::pool::{Held, Lease};
use crate::error::Result;
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

impl Lease<'_> {
    /// The first `n` elements of `T` of the leased buffer, to read on the lease's streams.
    pub(crate) fn view<T>(&self, n: usize) -> Result<DevRef<'_, T>> {
        let ptr = self.room::<T>(n)?;
        // SAFETY: the leased buffer holds at least `n` elements of `T` (`room` checked it),
        // aligned, device-reachable, exclusively ours while leased.
        Ok(unsafe { DevRef::from_raw(ptr, n) })
    }

    /// As [`Self::view`], writable.
    pub(crate) fn view_mut<T>(&mut self, n: usize) -> Result<DevMut<'_, T>> {
        let ptr = self.room::<T>(n)?;
        // SAFETY: as in `view`; `&mut self` makes the view the only one.
        Ok(unsafe { DevMut::from_raw(ptr, n) })
    }
}

impl Held {
    /// The first `n` elements of `T` of the held buffer, to read on a stream ordered after its
    /// last use ([`Held::wait`]).
    pub(crate) fn view<T>(&self, n: usize) -> Result<DevRef<'_, T>> {
        let ptr = self.room::<T>(n)?;
        // SAFETY: the held buffer holds at least `n` elements of `T` (`room` checked it),
        // 256-byte aligned device memory, exclusively ours while held.
        Ok(unsafe { DevRef::from_raw(ptr, n) })
    }

    /// As [`Self::view`], writable.
    pub(crate) fn view_mut<T>(&mut self, n: usize) -> Result<DevMut<'_, T>> {
        let ptr = self.room::<T>(n)?;
        // SAFETY: as in `view`; `&mut self` makes the view the only one.
        Ok(unsafe { DevMut::from_raw(ptr, n) })
    }
}
