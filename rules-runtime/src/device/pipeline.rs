//! The staged routes for large host-only shadows, as pipelines: the shadow moves in chunks through
//! a few pooled page-locked slots, so that the link carries one chunk while the host's threads
//! ([`crate::par`]) copy or add the next. Done whole, the same work is the link's time plus the
//! host's; pipelined it is about the longer of the two (measurements in docs/performance.md).
//!
//! The host reads and writes the slots directly, so before its first touch the stream is
//! synchronised: that covers the slots' previous use (which the lease makes the stream wait for)
//! and any work queued before the call that may still write a page-locked shadow. Each slot's
//! reuse then waits for the event recorded after the device's last use of it.

use crate::device::kernels;
use crate::driver::driver;
use crate::driver::pool::{Lease, Memory};
use crate::element::Differentiable;
use crate::error::{Error, Result, check_len};
use crate::memory::view::{DevMut, DevRef};
use crate::memory::{MemoryKind, Overlap, Region, ShadowMemory};
use crate::par;
use cudarc::driver::{CudaEvent, CudaStream, sys};

/// From this many bytes a staged route runs as a pipeline; below, the whole shadow is one chunk.
pub(crate) const MIN_BYTES: usize = 8 << 20;

/// Bytes per chunk: a multiple of every element size.
const CHUNK_BYTES: usize = 16 << 20;

/// The page-locked bytes the largest pipeline leases at once (`stage_in`'s three slots, `stage_out`'s
/// two): what [`crate::ops::reserve::reserve`] pools for operands from [`MIN_BYTES`].
pub(crate) const PIPELINE_BYTES: usize = {
    let (a, b) = (3 * CHUNK_BYTES, 2 * OUT_CHUNK_BYTES);
    if a > b { a } else { b }
};

/// Bytes per chunk of [`stage_out`], whose host share (an add: two reads and a write per element)
/// is the heavier one: larger chunks amortise the per-chunk wait.
const OUT_CHUNK_BYTES: usize = 32 << 20;

fn events<const K: usize>(s: &CudaStream) -> Result<[CudaEvent; K]> {
    let flags = Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
    let mut v = Vec::with_capacity(K);
    for _ in 0..K {
        v.push(
            s.context()
                .new_event(flags)
                .map_err(driver("cuEventCreate (staging pipeline)"))?,
        );
    }
    Ok(v.try_into()
        .unwrap_or_else(|_| unreachable!("K events were made")))
}

/// The slot `at` bytes into `slots`, as `len` elements.
///
/// # Safety
/// `slots` is pinned host memory of at least `at + len * size_of::<T>()` bytes, `at` is a
/// multiple of 16, and nothing else (host or device) touches the slot while the slice lives.
#[allow(clippy::mut_from_ref)] // the lease is the allocation; the caller guarantees exclusivity
unsafe fn slot<'a, T>(slots: &'a Lease<'_>, at: usize, len: usize) -> &'a mut [T] {
    let p = (slots.ptr() as usize + at) as *mut T;
    // SAFETY: by the caller's contract; page-aligned chunks are aligned for every element type.
    unsafe { core::slice::from_raw_parts_mut(p, len) }
}

/// `acc += src`: `acc` device-reachable memory, `src` host memory of the same length. The host's
/// threads copy each chunk into a pinned slot, which the accumulate kernel reads in place over
/// the link. Returns once every chunk is enqueued; `src` is no longer read by then.
pub(crate) fn stage_in<T: Differentiable>(
    s: &CudaStream,
    acc: &mut DevMut<'_, T>,
    src: &[T],
) -> Result<()> {
    check_len("the source of a staged accumulate", acc.len(), src.len())?;
    let acc = acc.addr();
    const SLOTS: usize = 3;
    let per = CHUNK_BYTES / size_of::<T>();
    let slots = Lease::new(Memory::PinnedHost, SLOTS * CHUNK_BYTES, s, s)?;
    s.synchronize()
        .map_err(driver("cuStreamSynchronize (staging pipeline)"))?;
    let done: [CudaEvent; SLOTS] = events(s)?;
    for (c, chunk) in src.chunks(per).enumerate() {
        let k = c % SLOTS;
        if c >= SLOTS {
            done[k]
                .synchronize()
                .map_err(driver("cuEventSynchronize (staging pipeline)"))?;
        }
        // SAFETY: the slot's last reader (the kernel of chunk c - SLOTS) has completed.
        par::copy(unsafe { slot(&slots, k * CHUNK_BYTES, chunk.len()) }, chunk);
        let at = acc + (c * CHUNK_BYTES) as u64;
        let from = slots.ptr() + (k * CHUNK_BYTES) as u64;
        // SAFETY: `at` holds the chunk's elements (the view holds `src.len()`); the slot holds
        // them in pinned memory that kernels reach through unified addressing; pooled memory
        // never overlaps the view.
        unsafe { kernels::launch_accumulate(s, T::DTYPE, at, from, chunk.len(), false)? };
        done[k]
            .record(s)
            .map_err(driver("cuEventRecord (staging pipeline)"))?;
    }
    Ok(())
}

/// The elements of `src`, copied on `s` into pooled page-locked memory and handed to `f` on the
/// host once the stream has reached the copy (the host waits for the stream): the staged route
/// of a small device → host accumulation.
pub(crate) fn with_host_copy<T: Differentiable, R>(
    s: &CudaStream,
    src: &DevRef<'_, T>,
    f: impl FnOnce(&[T]) -> R,
) -> Result<R> {
    let n = src.len();
    let bytes = n * size_of::<T>();
    let lease = crate::driver::probe::span("with_host_copy: Lease::new");
    let stage = Lease::new(Memory::PinnedHost, bytes, s, s)?;
    drop(lease);
    // SAFETY: the lease holds at least `bytes` of pinned memory; `src` holds `n` elements.
    unsafe { kernels::copy_dtoh(s, stage.ptr() as *mut u8, src.addr(), bytes)? };
    let _p = crate::driver::probe::span("with_host_copy: synchronize + host add + lease drop");
    s.synchronize()
        .map_err(driver("cuStreamSynchronize (device to host accumulation)"))?;
    // SAFETY: the stream is synchronised, so the staging buffer holds the `n` source elements
    // and no device work touches it until the lease drops; it is pinned host memory of at least
    // `bytes`, aligned for every element type (page-aligned).
    let staged = unsafe { core::slice::from_raw_parts(stage.ptr() as *const T, n) };
    Ok(f(staged))
}

/// `acc += src`: `acc` host memory, `src` device-reachable memory of the same length. The copy
/// engine brings each chunk into one of two pinned slots while the host's threads add the previous
/// one. Returns once `acc` holds the sums.
pub(crate) fn stage_out<T: Differentiable>(
    s: &CudaStream,
    acc: &mut [T],
    src: &DevRef<'_, T>,
) -> Result<()> {
    check_len("the source of a staged accumulate", acc.len(), src.len())?;
    let src = src.addr();
    const SLOTS: usize = 2;
    let per = OUT_CHUNK_BYTES / size_of::<T>();
    let n = acc.len();
    let slots = Lease::new(Memory::PinnedHost, SLOTS * OUT_CHUNK_BYTES, s, s)?;
    let landed: [CudaEvent; SLOTS] = events(s)?;
    let enqueue = |c: usize| -> Result<()> {
        let len = per.min(n - c * per);
        let to = (slots.ptr() as usize + (c % SLOTS) * OUT_CHUNK_BYTES) as *mut u8;
        let from = src + (c * OUT_CHUNK_BYTES) as u64;
        // SAFETY: the slot holds OUT_CHUNK_BYTES of pinned memory, no longer read by the host (its
        // previous chunk was added before this is enqueued); `from` holds `len` elements.
        unsafe { kernels::copy_dtoh(s, to, from, len * size_of::<T>())? };
        landed[c % SLOTS]
            .record(s)
            .map_err(driver("cuEventRecord (staging pipeline)"))
    };
    let chunks = n.div_ceil(per);
    if chunks > 0 {
        enqueue(0)?;
    }
    for (c, a) in acc.chunks_mut(per).enumerate() {
        if c + 1 < chunks {
            enqueue(c + 1)?;
        }
        landed[c % SLOTS]
            .synchronize()
            .map_err(driver("cuEventSynchronize (staging pipeline)"))?;
        // SAFETY: the copy into the slot has completed and the next one into it is enqueued only
        // after this add.
        par::add(a, unsafe {
            slot(&slots, (c % SLOTS) * OUT_CHUNK_BYTES, a.len())
        });
    }
    Ok(())
}

/// Bytes at the end of a [`take_pinned`] that the device zeroes itself (the fused kernel, writing
/// zeros over the link's other direction): the host's zeroing of the chunk before them overlaps
/// that kernel, so the call does not end with the host zeroing a whole chunk alone.
const TAIL_BYTES: usize = 4 << 20;

/// At most this many chunks (one event each) in a [`take_pinned`]: past `MAX_CHUNKS * CHUNK_BYTES`
/// the chunks grow instead.
const MAX_CHUNKS: usize = 64;

/// `acc += src; src ← 0` for a large page-locked `src`: the accumulate kernel reads `src` in place
/// over the link, chunk by chunk, and the host's threads zero each chunk once the kernel that read
/// it has completed, instead of a second pass over the link writing zeros; the last
/// [`TAIL_BYTES`] go through the fused kernel. Every kernel is enqueued first, so the device never
/// waits for the host. Returns once `src` is zero. If a launch fails, the chunks already launched
/// are still finished (added and zeroed) and nothing is running on `src` when this returns: every
/// chunk is either moved whole or left as it was.
///
/// `src` must be page-locked memory ([`MemoryKind::Pinned`]) that both kernels and the host reach,
/// of `acc`'s length, disjoint from it.
pub(crate) fn take_pinned<T, M>(s: &CudaStream, acc: &mut DevMut<'_, T>, src: &mut M) -> Result<()>
where
    T: Differentiable,
    M: ShadowMemory<Elem = T> + ?Sized,
{
    let n = acc.len();
    let kind = src.kind();
    let unsupported = |why| Error::UnsupportedKinds {
        op: "accumulate_and_zero",
        dst: MemoryKind::Device,
        src: kind,
        why,
    };
    if kind != MemoryKind::Pinned {
        return Err(unsupported(
            "the pinned pipeline takes page-locked memory only",
        ));
    }
    // The source's device address, ordered after its pending work; the work enqueued on it here
    // is waited for before returning, so its guard (which would record that work on the buffer,
    // and make the host view below wait for all of it) is not kept.
    let from = {
        let d = DevMut::unguarded(src, s).ok_or_else(|| unsupported("no device address"))?;
        check_len("the source of `accumulate_and_zero`", n, d.len())?;
        d.addr()
    };
    if acc.region().relation(Region::of::<T>(from, n)) != Overlap::Disjoint {
        return Err(Error::partial_overlap(
            "accumulate_and_zero",
            acc.region(),
            Region::of::<T>(from, n),
        ));
    }
    let h = src.host_mut()?.ok_or_else(|| unsupported("no host view"))?;
    check_len("a host view of a shadow", n, h.len())?;
    if h.as_ptr() as u64 != from {
        return Err(unsupported(
            "its host and device views are not the same memory",
        ));
    }
    // SAFETY: `acc` holds `n` elements ordered on `s`; `from` is the device address of the same
    // `n` page-locked elements as `h` (checked), disjoint from `acc` (checked).
    unsafe { take_pinned_raw(s, acc.addr(), from, h) }
}

/// [`take_pinned`] on addresses.
///
/// # Safety
/// `acc` holds `src.len()` elements of device-reachable memory ordered on `s`, disjoint from
/// `src`; `src_dev` is the device address of `src`'s elements, with the work pending on them
/// ordered before `s`'s next work.
unsafe fn take_pinned_raw<T: Differentiable>(
    s: &CudaStream,
    acc: u64,
    src_dev: u64,
    src: &mut [T],
) -> Result<()> {
    let n = src.len();
    let tail = n.min(TAIL_BYTES / size_of::<T>());
    let head_len = n - tail;
    let per = (CHUNK_BYTES / size_of::<T>()).max(head_len.div_ceil(MAX_CHUNKS));
    let chunks = head_len.div_ceil(per);
    // Units 0..chunks are the host-zeroed chunks, unit `chunks` the device-zeroed tail.
    let units = chunks + 1;
    let mut read = Vec::with_capacity(units);
    let flags = Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
    for _ in 0..units {
        read.push(
            s.context()
                .new_event(flags)
                .map_err(driver("cuEventCreate (pinned pipeline)"))?,
        );
    }
    // `launched` counts the kernels launched, so that a failed record is known to have left a
    // kernel running.
    let mut launched = 0;
    let mut enqueue = |u: usize| -> Result<()> {
        let (first, len, fused) = if u < chunks {
            (u * per, per.min(head_len - u * per), false)
        } else {
            (n - tail, tail, true)
        };
        let off = (first * size_of::<T>()) as u64;
        // SAFETY: both hold the unit's `len` elements by the caller's contract.
        unsafe { kernels::launch_accumulate(s, T::DTYPE, acc + off, src_dev + off, len, fused)? };
        launched += 1;
        read[u]
            .record(s)
            .map_err(driver("cuEventRecord (pinned pipeline)"))
    };
    let failed = (0..units).try_for_each(&mut enqueue).err();
    if failed.is_some() {
        // Whatever was launched completes before the host touches its chunks.
        let _ = s.synchronize();
    }
    let zeroed = (launched.min(chunks) * per).min(head_len);
    // Chunk `c` is zeroed once its kernel has completed.
    let waited = par::zero_behind(&mut src[..zeroed], per, |c| {
        if failed.is_some() {
            return Ok(());
        }
        read[c].synchronize().map_err(|e| {
            let _ = s.synchronize();
            driver("cuEventSynchronize (pinned pipeline)")(e)
        })
    });
    match (failed, waited) {
        (Some(e), _) | (None, Err(e)) => Err(e),
        // The tail's kernel, the last unit, writes `src` too: it completes before returning.
        (None, Ok(())) => read[chunks]
            .synchronize()
            .map_err(driver("cuEventSynchronize (pinned pipeline)")),
    }
}
