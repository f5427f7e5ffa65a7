//! Buffers made from host data, for `testing`'s checks: page-locked and unified buffers, and
//! [`KindBuffer`], memory of a declared kind that a pointer rule is handed by its address.
//! cudarc allocates pinned and unified memory uninitialised (its allocating calls are `unsafe`
//! for that reason): here each is written in full before anything can read it, so the safe
//! functions hand out only initialised memory.

use crate::driver::driver;
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use cudarc::driver::{
    CudaSlice, CudaStream, DevicePtrMut, DeviceRepr, PinnedHostSlice, UnifiedSlice, ValidAsZeroBits,
};
use std::sync::Arc;

/// Page-locked host memory of `stream`'s context holding `data`.
pub(crate) fn pinned<T>(stream: &Arc<CudaStream>, data: &[T]) -> Result<PinnedHostSlice<T>>
where
    T: Copy + DeviceRepr + ValidAsZeroBits,
{
    // SAFETY: the allocation is written in full below, before it is handed out or read.
    let mut p = unsafe { stream.context().alloc_pinned::<T>(data.len()) }
        .map_err(driver("cuMemHostAlloc"))?;
    let dst = p.as_mut_ptr().map_err(driver("cuEventSynchronize"))?;
    // SAFETY: `dst` is the allocation's start, valid for `data.len()` elements of `T`, and a
    // fresh allocation cannot overlap `data`.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
    Ok(p)
}

/// Unified (managed) memory of `stream`'s context holding `data`, attached globally.
pub(crate) fn unified<T>(stream: &Arc<CudaStream>, data: &[T]) -> Result<UnifiedSlice<T>>
where
    T: Copy + DeviceRepr + ValidAsZeroBits,
{
    // SAFETY: the allocation is written in full (the copy below) before it is handed out; the
    // copy is ordered on `stream`, and readers synchronise with it through cudarc's events.
    let mut u = unsafe { stream.context().alloc_unified::<T>(data.len(), true) }
        .map_err(driver("cuMemAllocManaged"))?;
    stream
        .memcpy_htod(data, &mut u)
        .map_err(driver("cuMemcpyHtoDAsync"))?;
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize"))?;
    Ok(u)
}

/// The bytes of `data`.
fn bytes_of<T: Differentiable>(data: &[T]) -> &[u8] {
    // SAFETY: the element types (f32, f64, f16, bf16 and complex of f32 and f64: the trait is
    // sealed) are plain numbers without padding, so every byte of `data` is initialised; the
    // view has `data`'s address, its size in bytes and its lifetime.
    unsafe { core::slice::from_raw_parts(data.as_ptr().cast::<u8>(), size_of_val(data)) }
}

/// The elements whose bytes `bytes` holds (its length a multiple of the element's size).
fn from_bytes<T: Differentiable>(bytes: &[u8]) -> Result<Vec<T>> {
    let size = size_of::<T>();
    if !bytes.len().is_multiple_of(size) {
        return Err(Error::LengthMismatch {
            what: "the bytes of a buffer of elements".into(),
            expected: bytes.len().next_multiple_of(size),
            found: bytes.len(),
        });
    }
    let mut v = vec![T::zero(); bytes.len() / size];
    // SAFETY: `v` holds exactly `bytes.len()` bytes (checked above), a fresh allocation that
    // cannot overlap `bytes`; every bit pattern is a value of these float types.
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr().cast::<u8>(), bytes.len());
    }
    Ok(v)
}

/// Memory of a declared kind holding a copy of host data, reached by its address: what a check
/// of a pointer rule hands the rule. Device, pinned and unified memory hold bytes, so that every
/// element type fits (cudarc's typed buffers take no complex numbers).
pub(crate) enum KindBuffer<T> {
    /// A `Vec`, for pageable host memory.
    Host(Vec<T>),
    /// Page-locked host memory.
    Pinned(PinnedHostSlice<u8>),
    /// Device memory.
    Device(CudaSlice<u8>),
    /// Unified (managed) memory.
    Unified(UnifiedSlice<u8>),
}

impl<T: Differentiable> KindBuffer<T> {
    /// Memory of `kind` holding `data`, on `stream`'s context (none is needed for host memory).
    /// A CUDA array has no address: `Error::UnsupportedKinds`.
    pub(crate) fn new(
        kind: MemoryKind,
        stream: Option<&Arc<CudaStream>>,
        data: &[T],
    ) -> Result<Self> {
        if kind == MemoryKind::Host {
            return Ok(KindBuffer::Host(data.to_vec()));
        }
        let Some(stream) = stream else {
            return Err(Error::NoStream(format!(
                "a check's buffer of {kind:?} memory"
            )));
        };
        let bytes = bytes_of(data);
        Ok(match kind {
            MemoryKind::Host => KindBuffer::Host(data.to_vec()),
            MemoryKind::Pinned => KindBuffer::Pinned(pinned(stream, bytes)?),
            MemoryKind::Unified => KindBuffer::Unified(unified(stream, bytes)?),
            MemoryKind::Device => {
                let b = stream
                    .clone_htod(bytes)
                    .map_err(driver("cuMemcpyHtoDAsync"))?;
                stream
                    .synchronize()
                    .map_err(driver("cuStreamSynchronize"))?;
                KindBuffer::Device(b)
            }
            MemoryKind::Array => {
                return Err(Error::UnsupportedKinds {
                    op: "a check of a pointer rule",
                    dst: kind,
                    src: kind,
                    why: "a CUDA array has no address: check a rule that takes `&CudaArray` \
                          with `testing::check_region`",
                });
            }
        })
    }

    /// The address a rule of this kind takes: host memory's, or the device address (unified
    /// memory's is also its host address).
    pub(crate) fn ptr(&mut self, stream: Option<&Arc<CudaStream>>) -> Result<*mut T> {
        let no_stream = || Error::NoStream("a check's device buffer".into());
        Ok(match self {
            KindBuffer::Host(v) => v.as_mut_ptr(),
            KindBuffer::Pinned(p) => p.as_mut_ptr().map_err(driver("cuEventSynchronize"))?.cast(),
            KindBuffer::Device(b) => {
                let (addr, _record) = b.device_ptr_mut(stream.ok_or_else(no_stream)?);
                addr as usize as *mut T
            }
            KindBuffer::Unified(u) => {
                let (addr, _record) = u.device_ptr_mut(stream.ok_or_else(no_stream)?);
                addr as usize as *mut T
            }
        })
    }

    /// The contents, once the work enqueued on them has finished (the caller synchronises).
    pub(crate) fn read(&self, stream: Option<&Arc<CudaStream>>) -> Result<Vec<T>> {
        match self {
            KindBuffer::Host(v) => Ok(v.clone()),
            KindBuffer::Pinned(p) => {
                from_bytes(p.as_slice().map_err(driver("cuEventSynchronize"))?)
            }
            KindBuffer::Unified(u) => {
                from_bytes(u.as_slice().map_err(driver("cuEventSynchronize"))?)
            }
            KindBuffer::Device(b) => {
                let stream =
                    stream.ok_or_else(|| Error::NoStream("a check's device buffer".into()))?;
                let v = stream.clone_dtoh(b).map_err(driver("cuMemcpyDtoHAsync"))?;
                stream
                    .synchronize()
                    .map_err(driver("cuStreamSynchronize"))?;
                from_bytes(&v)
            }
        }
    }
}
