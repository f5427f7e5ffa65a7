//! NCCL's raw corners, for `crate::nccl` (which forbids `unsafe`): the text of a result code, and
//! scratch device memory from the runtime's pool seen as typed cudarc slices for NCCL's calls.

use crate::driver::pool::{Lease, Memory};
use crate::element::Differentiable;
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut, DeviceRepr};
use std::sync::Arc;

/// NCCL's description of `code`. The caller has checked that NCCL can be loaded.
pub(crate) fn error_string(code: cudarc::nccl::sys::ncclResult_t) -> String {
    // SAFETY: NCCL is loadable (the caller's check); it returns a static string for every code.
    unsafe {
        let p = cudarc::nccl::sys::ncclGetErrorString(code);
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

/// Scratch device memory for one lane of a collective rule (a received cotangent, zeros for a
/// `Const` input, a discarded result for a `Const` output): up to two buffers leased from the
/// runtime's one pool ([`crate::driver::pool`]), seen as typed cudarc slices for NCCL's calls.
///
/// Everything that touches them is enqueued on the communicator's stream, which the leases order
/// after the buffers' previous uses and before their next ones (events), whatever stream those are
/// on. Dropping the scratch hands the addresses back untouched (cudarc never frees pool memory),
/// then the buffers to the pool. Nothing is keyed by stream, so a communicator per request
/// reuses the same few buffers.
pub(crate) struct Scratch<'s, T: Differentiable + DeviceRepr> {
    slices: [Option<CudaSlice<T>>; 2],
    leases: [Option<Lease<'s>>; 2],
}

impl<'s, T: Differentiable + DeviceRepr> Scratch<'s, T> {
    /// Buffers of `lens[0]` and `lens[1]` elements (none for `None`), for work on `stream`.
    pub(crate) fn new(stream: &'s Arc<CudaStream>, lens: [Option<usize>; 2]) -> Result<Self> {
        let mut scratch = Scratch {
            slices: [None, None],
            leases: [None, None],
        };
        for (i, n) in lens.into_iter().enumerate() {
            let Some(n) = n else { continue };
            let bytes = n.checked_mul(size_of::<T>()).ok_or(Error::RangeOverflow {
                what: "collective scratch",
                offset: 0,
                len: n,
            })?;
            let lease = Lease::new(Memory::Device, bytes, stream, stream)?;
            // SAFETY: the lease holds at least `bytes` of device memory of `stream`'s context,
            // aligned for every element (`cuMemAlloc`); every `Differentiable` type (sealed:
            // floats and pairs of floats) is valid for any bits; the slice is leaked, never freed,
            // before the lease ends (`Drop` below).
            scratch.slices[i] = Some(unsafe { stream.upgrade_device_ptr::<T>(lease.ptr(), n) });
            scratch.leases[i] = Some(lease);
        }
        Ok(scratch)
    }

    /// Views of the two buffers.
    pub(crate) fn views(&mut self) -> ViewPair<'_, T> {
        let [a, b] = &mut self.slices;
        (
            a.as_mut().map(|s| s.slice_mut(..)),
            b.as_mut().map(|s| s.slice_mut(..)),
        )
    }
}

impl<T: Differentiable + DeviceRepr> Drop for Scratch<'_, T> {
    fn drop(&mut self) {
        for s in self.slices.iter_mut().filter_map(Option::take) {
            // Pool memory: cudarc must not free it. `leak` orders the stream after cudarc's own
            // events on the slice, then gives the address back.
            let _ = s.leak();
        }
        // Then the buffers go back to the pool, their last use recorded on the stream.
        self.leases = [None, None];
    }
}

/// Two optional scratch views.
pub(crate) type ViewPair<'a, T> = (Option<CudaViewMut<'a, T>>, Option<CudaViewMut<'a, T>>);
