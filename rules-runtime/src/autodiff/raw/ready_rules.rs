//! The ready-made bridged copies' rule objects: cudarc's copy, a pitched box copy and cudarc's
//! memset, whose memory kinds and lengths come from the call's handles (any linear kind).
//! [`super::ready`] drives them through the same bridge functions as a generated rule.

use super::AdBuf;
use super::bridge::Streams;
use super::rules::{Linear, Memset, Region};
use crate::autodiff::AdError;
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use crate::memory::linear::{End, memcpy3d};
use crate::ops::On;
use crate::region::Pitched;
use crate::rules::{PtrCopy, RawCopyRule, RawMemsetRule, RawRegion, RawRegionRule};
use cudarc::driver::CudaStream;
use cudarc::driver::sys::{self, CUmemorytype};
use std::sync::Arc;

/// Where a ready-made copy runs: on the handles' stream (the driver's copy), or, for pageable
/// host memory on both sides and no stream, on the host.
#[derive(Clone, Copy)]
pub struct Place<'s>(Option<&'s Arc<CudaStream>>);

impl<'s> Place<'s> {
    /// The stream of the call's handles, or the host when every side is pageable host memory
    /// (`AdPair::new_host`); other memory needs the stream its pair was made with.
    fn of(s: Streams<'s>, kinds: &[MemoryKind]) -> Result<Self, AdError> {
        match s.get() {
            Ok(st) => Ok(Place(Some(st))),
            Err(_) if kinds.iter().all(|k| *k == MemoryKind::Host) => Ok(Place(None)),
            Err(e) => Err(e),
        }
    }

    fn on(self) -> On<'s> {
        match self.0 {
            Some(s) => On::stream(&**s),
            None => On::Host,
        }
    }

    /// Waits for the stream when a side is host memory (pageable or pinned), so that the copy
    /// has finished with it when the primitive returns, as cudarc's copies to host memory do.
    fn finish(self, kinds: [MemoryKind; 2]) -> Result<()> {
        match self.0 {
            Some(s)
                if kinds
                    .iter()
                    .any(|k| matches!(k, MemoryKind::Host | MemoryKind::Pinned)) =>
            {
                s.synchronize().map_err(Error::primal)
            }
            _ => Ok(()),
        }
    }
}

/// The driver's memory type of a linear kind.
fn memory_type(kind: MemoryKind) -> CUmemorytype {
    match kind {
        MemoryKind::Device => CUmemorytype::CU_MEMORYTYPE_DEVICE,
        MemoryKind::Unified => CUmemorytype::CU_MEMORYTYPE_UNIFIED,
        _ => CUmemorytype::CU_MEMORYTYPE_HOST,
    }
}

/// `dst ← src`, `n` elements, between linear memory of any kinds: `cuMemcpyAsync` (the driver
/// tells the kinds from the addresses), or a host copy.
pub struct Copy<'s> {
    place: Place<'s>,
    kinds: [MemoryKind; 2],
    n: usize,
}

// SAFETY: the plan is the call's: offset 0 and `n` elements on each side, in the kinds the
// handles declare; the primitive writes exactly those `n` elements of `dst` and reads `n` of `src`.
unsafe impl<'s, T: Differentiable> RawCopyRule<'s, T> for Copy<'s> {
    fn __plan(&self) -> (On<'s>, PtrCopy) {
        let [dst_kind, src_kind] = self.kinds;
        let shape = PtrCopy {
            dst_kind,
            src_kind,
            dst_offset: 0,
            src_offset: 0,
            n: self.n,
        };
        (self.place.on(), shape)
    }
    unsafe fn __primal(&mut self, dst: *mut T, src: *const T) -> Result<()> {
        match self.place.0 {
            // SAFETY: `n` elements at each, valid in their kinds (the trait's contract); an exact
            // self-copy never reaches the primitive, and a partial overlap is refused before.
            None => unsafe { core::ptr::copy_nonoverlapping(src, dst, self.n) },
            Some(s) => {
                let bytes = self.n * size_of::<T>();
                // SAFETY: as above, on the handles' stream.
                unsafe { sys::cuMemcpyAsync(dst as u64, src as u64, bytes, s.cu_stream()) }
                    .result()
                    .map_err(Error::primal)?;
            }
        }
        self.place.finish(self.kinds)
    }
}

/// `dst ← 0` bytewise, `n` elements of device or unified memory (`cuMemsetD8Async`, as cudarc's
/// `memset_zeros`), or of pageable host memory on the host.
pub struct Zero<'s> {
    place: Place<'s>,
    kind: MemoryKind,
    n: usize,
}

// SAFETY: the plan is the `n` elements from offset 0 that the primitive sets.
unsafe impl<'s, T: Differentiable> RawMemsetRule<'s, T> for Zero<'s> {
    fn __plan(&self) -> (On<'s>, RawRegion, bool) {
        let shape = RawRegion {
            dst_kind: self.kind,
            src_kind: self.kind,
            dst: Pitched::linear::<T>(0, self.n),
            src: None,
        };
        (self.place.on(), shape, false)
    }
    unsafe fn __primal(&mut self, dst: *mut T) -> Result<()> {
        match self.place.0 {
            // SAFETY: `n` elements, valid for writes (the trait's contract); every element type
            // here is valid as zero bits.
            None => unsafe { core::ptr::write_bytes(dst, 0, self.n) },
            Some(s) => {
                let bytes = self.n * size_of::<T>();
                // SAFETY: as above, device-reachable memory on the handles' stream.
                unsafe { sys::cuMemsetD8Async(dst as u64, 0, bytes, s.cu_stream()) }
                    .result()
                    .map_err(Error::primal)?;
            }
        }
        Ok(())
    }
}

/// A pitched box, `dst[box] ← src[box]` (2D: depth 1), between linear memory of any kinds:
/// `cuMemcpy3DAsync`, or row by row on the host.
pub struct Boxes<'s> {
    place: Place<'s>,
    kinds: [MemoryKind; 2],
    dst: Pitched,
    src: Pitched,
}

// SAFETY: the plan is the two boxes the primitive copies, rows only (never the padding).
unsafe impl<'s, T: Differentiable> RawRegionRule<'s, T> for Boxes<'s> {
    fn __plan(&self) -> (On<'s>, RawRegion, bool) {
        let shape = RawRegion {
            dst_kind: self.kinds[0],
            src_kind: self.kinds[1],
            dst: self.dst,
            src: Some(self.src),
        };
        (self.place.on(), shape, false)
    }
    unsafe fn __primal(&mut self, dst: *mut T, src: *const T) -> Result<()> {
        let (d, s) = (self.dst, self.src);
        let (w, h, depth) = d.shape();
        // An empty box copies nothing: its rows are not walked (a width-0 box may have
        // `usize::MAX` rows of pitch 0), nor is the driver asked for nothing.
        if d.elements() == 0 {
            return Ok(());
        }
        match self.place.0 {
            None => {
                let row = |b: Pitched, y: usize, z: usize| {
                    (z * b.slice_height + y) * (b.pitch / size_of::<T>())
                };
                for z in 0..depth {
                    for y in 0..h {
                        // SAFETY: the rows of both boxes, checked against the handles' lengths
                        // by the rule before the primitive runs (pitches are whole elements).
                        unsafe {
                            core::ptr::copy_nonoverlapping(
                                src.add(row(s, y, z)),
                                dst.add(row(d, y, z)),
                                w,
                            )
                        };
                    }
                }
            }
            Some(st) => {
                let end =
                    |k, p: u64, b: Pitched| End::Linear(memory_type(k), p, b.pitch, b.slice_height);
                let (dk, sk) = (self.kinds[0], self.kinds[1]);
                // SAFETY: both boxes checked against the handles (the trait's contract).
                unsafe {
                    memcpy3d(
                        st,
                        end(dk, dst as u64, d),
                        end(sk, src as u64, s),
                        size_of::<T>(),
                        (w, h, depth),
                    )
                }
                .map_err(Error::primal)?;
            }
        }
        self.place.finish(self.kinds)
    }
}

/// A handle's kind and length, for the rule object (read before the bridge checks the handle,
/// which refuses a wrong one).
///
/// # Safety
/// `h` points at a live handle.
pub(super) unsafe fn meta<T>(h: *const AdBuf<T>) -> (MemoryKind, usize) {
    // SAFETY: the caller's contract.
    let h = unsafe { &*h };
    (h.kind(), h.len())
}

/// [`meta`] of a handle in a primal's place, refused (as the bridge would refuse it) when it is a
/// shadow handle: before the rule object is made, so that the error names the handle, not the
/// stream a shadow handle does not carry.
///
/// # Safety
/// As [`meta`].
pub(super) unsafe fn primal_meta<T>(
    h: *const AdBuf<T>,
    what: &'static str,
) -> Result<(MemoryKind, usize), AdError> {
    // SAFETY: the caller's contract.
    let b = unsafe { &*h };
    if b.role != super::PRIMAL {
        let kind = b.kind();
        return Err(AdError::Handle {
            what,
            why: format!(
                "expected the primal handle of {kind:?} memory, got the shadow handle of {kind:?} memory"
            ),
        });
    }
    Ok((b.kind(), b.len()))
}

/// The rule object of a linear copy: the lengths must agree, as cudarc's copies ask.
pub(super) fn copy<'s>(
    s: Streams<'s>,
    (dk, dn): (MemoryKind, usize),
    (sk, sn): (MemoryKind, usize),
) -> Result<Linear<Copy<'s>>, AdError> {
    if dn != sn {
        return Err(AdError::Rule(Error::LengthMismatch {
            what: "the copy's destination (the source's length)".into(),
            expected: sn,
            found: dn,
        }));
    }
    let place = Place::of(s, &[dk, sk])?;
    Ok(Linear(Copy {
        place,
        kinds: [dk, sk],
        n: dn,
    }))
}

/// The rule object of `memset_zeros`: device or unified memory (cudarc's), or pageable host
/// memory without a stream.
pub(super) fn zero<'s>(
    s: Streams<'s>,
    (k, n): (MemoryKind, usize),
) -> Result<Memset<Zero<'s>>, AdError> {
    let place = Place::of(s, &[k])?;
    let fits = match place.0 {
        Some(_) => matches!(k, MemoryKind::Device | MemoryKind::Unified),
        None => true,
    };
    if !fits {
        return Err(AdError::Handle {
            what: "dst",
            why: format!(
                "memset_zeros sets device or unified memory (as cudarc's), not {k:?} memory"
            ),
        });
    }
    Ok(Memset(Zero { place, kind: k, n }))
}

/// The rule object of a box copy: `(pitch, rows per slice)` of each side, `(width, height,
/// depth)` of the box.
pub(super) fn boxes<'s>(
    s: Streams<'s>,
    kinds: [MemoryKind; 2],
    (dp, dr): (usize, usize),
    (sp, sr): (usize, usize),
    (w, h, d): (usize, usize, usize),
) -> Result<Region<Boxes<'s>>, AdError> {
    let place = Place::of(s, &kinds)?;
    Ok(Region(Boxes {
        place,
        kinds,
        dst: Pitched::slices(0, w, h, d, dp, dr),
        src: Pitched::slices(0, w, h, d, sp, sr),
    }))
}
