//! Memory kinds and the shadow-memory trait.
//!
//! A shadow lives in some kind of memory. [`ShadowRead`] and [`ShadowMemory`] say which, how long
//! it is, and hand out host slices or device addresses that the operations in [`crate::ops`]
//! dispatch on. Both are `unsafe` traits: the runtime launches kernels over what they answer. One file
//! per kind: [`host`] (pageable `[T]`, `Vec<T>`, arrays), [`device`] (`CudaSlice`, `CudaView`,
//! `CudaViewMut`), [`pinned`] (`PinnedHostSlice`), [`unified`] (`UnifiedSlice`) and [`raw`] (raw
//! pointers with a declared kind). CUDA arrays and pitched regions are reserved ([`MemoryKind::Array`]).

pub mod array;
pub mod device;
#[cfg(feature = "testing")]
pub(crate) mod filled;
pub mod host;
pub mod linear;
pub mod pinned;
pub mod raw;
pub(crate) mod rows;
pub(crate) mod staged;
pub mod unified;
pub(crate) mod view;

use crate::element::Differentiable;
use crate::error::Result;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

pub use crate::address::{MemoryKind, Overlap, Region};

/// A device address usable by kernels and copies on one stream, holding cudarc's
/// synchronisation guard (an event record) until the work is enqueued. The address itself is
/// private: only the runtime launches work on it.
pub struct DeviceAddr<'a> {
    addr: u64,
    _sync: Option<cudarc::driver::SyncOnDrop<'a>>,
}

impl DeviceAddr<'_> {
    /// An address with no synchronisation guard, for implementations of [`ShadowRead`].
    ///
    /// # Safety
    /// `addr` must point at the buffer's `len()` elements, reachable from the stream's device,
    /// and the buffer's pending work must already be ordered before the stream's next work.
    pub unsafe fn new(addr: u64) -> Self {
        DeviceAddr { addr, _sync: None }
    }

    /// The address.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// The address, without cudarc's guard: the work enqueued on it is not recorded on the
    /// buffer. Only for callers that wait for all of that work before returning.
    pub(crate) fn unguarded(self) -> u64 {
        if let Some(guard) = self._sync {
            // The guard holds references only: nothing leaks.
            core::mem::forget(guard);
        }
        self.addr
    }
}

impl<'a> DeviceAddr<'a> {
    /// An address with cudarc's guard, which records the stream's work on the buffer when dropped.
    pub(crate) fn guarded(addr: u64, sync: cudarc::driver::SyncOnDrop<'a>) -> Self {
        DeviceAddr {
            addr,
            _sync: Some(sync),
        }
    }
}

/// Memory a shadow can be read from: what the runtime needs to *read* a buffer.
///
/// # Safety
/// The runtime's kernels and copies trust these answers for addresses and lengths, so an
/// implementation must guarantee, for as long as the value is borrowed:
/// - [`len`](ShadowRead::len) is the number of elements, and [`region`](ShadowRead::region) is
///   the byte range `addr .. addr + len * size_of::<Elem>()` of those elements (the address being
///   the one [`host`](ShadowRead::host) or [`device`](ShadowRead::device) hands out);
/// - [`host`](ShadowRead::host) returns `None` or a slice of exactly `len()` elements;
/// - [`device`](ShadowRead::device) returns `None` or the address of `len()` elements readable by
///   work ordered on `stream`, on the device of `stream`'s context (or of
///   [`context`](ShadowRead::context), which must be the context the memory belongs to), with
///   every pending write to them already ordered before that work;
/// - [`raw_host_base`](ShadowRead::raw_host_base) returns `None` (the default), or, for host
///   memory, the address of element 0 such that each element inside a box the runtime was given
///   for this buffer is valid for reads (and, through [`ShadowMemory`], writes) at `base + index`;
/// - [`kind`](ShadowRead::kind) is the memory the elements live in. `Host` is memory that host code
///   reads and writes (the runtime waits for the copy's stream before it does, so page-locked or
///   managed memory seen as a plain slice is fine); `Device`, `Pinned` and `Unified` must be
///   reachable by kernels at the address [`device`](ShadowRead::device) gives.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be read as a shadow",
    label = "this buffer type does not implement `ShadowRead`",
    note = "use a slice `[T]`, `Vec<T>`, or a cudarc buffer (`CudaSlice<T>`, `CudaView<T>`, `CudaViewMut<T>`, `PinnedHostSlice<T>`, `UnifiedSlice<T>`)"
)]
pub unsafe trait ShadowRead {
    /// The element type.
    type Elem: Differentiable;
    /// The memory kind, for dispatch and messages.
    fn kind(&self) -> MemoryKind;
    /// Number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The byte range, for alias checks. Must not enqueue work, wait or change the thread's
    /// current context.
    fn region(&self) -> Region;
    /// The stream the buffer's work is ordered on, if it has one (cudarc device buffers do). Work
    /// on device memory given no stream ([`crate::On::Host`]) is ordered there.
    fn home_stream(&self) -> Option<&Arc<CudaStream>> {
        None
    }
    /// The CUDA context the memory belongs to, if any.
    fn context(&self) -> Option<&Arc<CudaContext>> {
        None
    }
    /// The elements, for host code: pageable host memory always; pinned and unified memory after
    /// waiting for the work pending on them; `None` for device memory.
    fn host(&self) -> Result<Option<&[Self::Elem]>>;
    /// The device address for work ordered on `stream` (device, pinned and unified memory);
    /// `None` for pageable host memory.
    fn device<'a>(&'a self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>>;
    /// For CUDA array memory ([`MemoryKind::Array`]): the array, which the runtime reaches only
    /// through box copies. `None` for every other kind.
    fn array(&self) -> Option<array::ArrayRef<'_>> {
        None
    }
    /// For a view made from a raw pointer (`RawShadow`): the host address of element 0, so that
    /// region work touches only the rows of its boxes, never the memory between them (which the
    /// pointer's contract does not cover). `None` (the default): [`host`](ShadowRead::host)
    /// covers all `len()` elements.
    #[doc(hidden)]
    fn raw_host_base(&self) -> Option<*mut Self::Elem> {
        None
    }
}

/// Memory that can hold a shadow (a derivative) of a copy's buffer: readable *and* writable, since
/// a reverse pass writes every shadow it touches (it zeroes the destination's, accumulates into
/// the source's).
///
/// Implemented for every memory kind the runtime knows: pageable host slices and vectors,
/// cudarc's device (`CudaSlice`, `CudaViewMut`), pinned and unified buffers, and raw pointers with
/// a declared kind. A read-only `CudaView` is [`ShadowRead`] only: it can be the source of
/// [`crate::accumulate`], and a rule's source primal (whose shadows are then writable cudarc
/// buffers), never a destination or a shadow.
///
/// # Safety
/// As [`ShadowRead`], and: [`host_mut`](ShadowMemory::host_mut) returns `None` or exactly `len()`
/// elements; [`device_mut`](ShadowMemory::device_mut) returns `None` or the address of `len()`
/// elements writable by work ordered on `stream`, with every pending read and write of them
/// ordered before that work, and nothing else writing them meanwhile.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a shadow for a derivative rule",
    label = "this buffer type does not implement `ShadowMemory`",
    note = "use a slice `[T]`, `Vec<T>`, or a writable cudarc buffer (`CudaSlice<T>`, `CudaViewMut<T>`, `PinnedHostSlice<T>`, `UnifiedSlice<T>`)",
    note = "a read-only `CudaView` can only be a source's primal (`#[src] x: &CudaView<'_, T>`, called with `Duplicated::new(&x, &mut dx)`, `dx` a `CudaViewMut` or `CudaSlice`): a destination and every shadow are written, so write `&mut CudaViewMut<'_, T>` or `&mut CudaSlice<T>` for them"
)]
pub unsafe trait ShadowMemory: ShadowRead {
    /// The elements, for host code to write; as [`ShadowRead::host`].
    fn host_mut(&mut self) -> Result<Option<&mut [Self::Elem]>>;
    /// The device address for work that writes, ordered on `stream`; as [`ShadowRead::device`].
    fn device_mut<'a>(&'a mut self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>>;
}

/// Proof that two buffers hold the same element type, so one can be copied into the other.
#[diagnostic::on_unimplemented(
    message = "`{Self}` and `{Other}` hold different element types",
    label = "a copy's destination and source must hold the same element type",
    note = "a copy cannot convert: make `#[dst]` and `#[src]` hold the same element type"
)]
pub trait SameElem<Other: ?Sized> {}
impl<X, Y> SameElem<Y> for X
where
    X: ShadowRead + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
{
}

// SAFETY: forwards to `M`, whose answers are trusted by its own `unsafe impl`.
unsafe impl<M: ShadowRead + ?Sized> ShadowRead for &mut M {
    type Elem = M::Elem;
    fn kind(&self) -> MemoryKind {
        (**self).kind()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn region(&self) -> Region {
        (**self).region()
    }
    fn home_stream(&self) -> Option<&Arc<CudaStream>> {
        (**self).home_stream()
    }
    fn context(&self) -> Option<&Arc<CudaContext>> {
        (**self).context()
    }
    fn host(&self) -> Result<Option<&[Self::Elem]>> {
        (**self).host()
    }
    fn device<'a>(&'a self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        (**self).device(stream)
    }
    fn array(&self) -> Option<array::ArrayRef<'_>> {
        (**self).array()
    }
    fn raw_host_base(&self) -> Option<*mut Self::Elem> {
        (**self).raw_host_base()
    }
}

// SAFETY: as above.
unsafe impl<M: ShadowMemory + ?Sized> ShadowMemory for &mut M {
    fn host_mut(&mut self) -> Result<Option<&mut [Self::Elem]>> {
        (**self).host_mut()
    }
    fn device_mut<'a>(&'a mut self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        (**self).device_mut(stream)
    }
}

/// A read-only buffer seen as [`ShadowMemory`] that hands out no writable view: the operations
/// that only read a source ([`crate::accumulate`], [`crate::accumulate_region`]) take it, and
/// never ask it for a writable view (it would answer `None`).
pub(crate) struct ReadOnly<'b, B: ?Sized>(pub(crate) &'b B);

// SAFETY: forwards to `B`'s own answers.
unsafe impl<B: ShadowRead + ?Sized> ShadowRead for ReadOnly<'_, B> {
    type Elem = B::Elem;
    fn kind(&self) -> MemoryKind {
        self.0.kind()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn region(&self) -> Region {
        self.0.region()
    }
    fn home_stream(&self) -> Option<&Arc<CudaStream>> {
        self.0.home_stream()
    }
    fn context(&self) -> Option<&Arc<CudaContext>> {
        self.0.context()
    }
    fn host(&self) -> Result<Option<&[B::Elem]>> {
        self.0.host()
    }
    fn device<'a>(&'a self, stream: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        self.0.device(stream)
    }
    fn array(&self) -> Option<array::ArrayRef<'_>> {
        self.0.array()
    }
    // `raw_host_base` is not forwarded: a read-only source is read through `host`, and a raw
    // view of boxes answers that with an error rather than a slice over its padding.
}

// SAFETY: no writable view is ever handed out.
unsafe impl<B: ShadowRead + ?Sized> ShadowMemory for ReadOnly<'_, B> {
    fn host_mut(&mut self) -> Result<Option<&mut [B::Elem]>> {
        Ok(None)
    }
    fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer that breaks its contract: its length changes once its region has been asked for
    /// (as the planning does). What is written is checked against what was planned.
    struct Shifty {
        data: Vec<f32>,
        asked: core::cell::Cell<bool>,
    }

    // SAFETY: not sound (the length changes), on purpose: the runtime must refuse, not write past.
    unsafe impl ShadowRead for Shifty {
        type Elem = f32;
        fn kind(&self) -> MemoryKind {
            MemoryKind::Host
        }
        fn len(&self) -> usize {
            if self.asked.get() { 4 } else { 3 }
        }
        fn region(&self) -> Region {
            self.asked.set(true);
            Region::of::<f32>(self.data.as_ptr() as u64, 3)
        }
        fn host(&self) -> Result<Option<&[f32]>> {
            Ok(Some(&self.data[..]))
        }
        fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
            None
        }
    }

    // SAFETY: as above.
    unsafe impl ShadowMemory for Shifty {
        fn host_mut(&mut self) -> Result<Option<&mut [f32]>> {
            Ok(Some(&mut self.data[..]))
        }
        fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
            None
        }
    }

    /// The run-time half of the length check: a plan made on one length is not run on another.
    #[test]
    fn a_plan_is_checked_against_the_buffer_it_writes_through() {
        let mut acc = Shifty {
            data: vec![1.0; 4],
            asked: core::cell::Cell::new(false),
        };
        let src = [1.0f32; 3];
        let e = crate::ops::accumulate(crate::ops::On::Host, &mut acc, &src[..]).unwrap_err();
        assert!(
            matches!(e, crate::error::Error::LengthMismatch { .. }),
            "{e}"
        );
        assert_eq!(acc.data, [1.0; 4], "nothing written");
    }

    #[test]
    fn region_relations() {
        let a = Region::of::<f32>(1000, 4); // 1000..1016
        assert_eq!(a.relation(a), Overlap::Same);
        assert_eq!(a.relation(Region::of::<f32>(1016, 4)), Overlap::Disjoint);
        assert_eq!(a.relation(Region::of::<f32>(1012, 4)), Overlap::Partial);
        assert_eq!(a.relation(Region::of::<f32>(1000, 3)), Overlap::Partial);
        assert_eq!(a.relation(Region::of::<f32>(1004, 0)), Overlap::Disjoint);
    }
}
