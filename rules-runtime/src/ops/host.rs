//! Shadow work that touches host memory from the host: the plain loops, and the two staged
//! routes between host-only memory and device-reachable memory, through pooled buffers
//! ([`crate::device::pool`]).
//!
//! A host slice may really be page-locked or managed memory (`pinned.as_mut_slice()` is a
//! `&mut [T]`), for which a host↔device copy is truly asynchronous. So no host buffer is written
//! (zeroed, or accumulated into) while a copy enqueued here may still read it: the stream is
//! synchronised first. Zeroing the source is always the last step.

use super::{Op, Source, par, pipeline};
use crate::cuda::driver;
use crate::device::kernels;
use crate::device::pool::{Lease, Memory};
use crate::element::Differentiable;
use crate::error::{Error, Result, check_len};
use crate::memory::{ShadowMemory, ShadowRead};
use cudarc::driver::CudaStream;

fn unsupported(op: Op, dst: crate::MemoryKind, src: crate::MemoryKind, why: &'static str) -> Error {
    Error::UnsupportedKinds {
        op: op.name(),
        dst,
        src,
        why,
    }
}

/// The host elements of `m`, checked to be exactly `n` (an implementation of the unsafe traits
/// that breaks its contract gets an error, not an out-of-bounds access).
pub(super) fn host_of<M: ShadowRead + ?Sized>(op: Op, m: &M, n: usize) -> Result<&[M::Elem]> {
    let kind = m.kind();
    let h = m.host()?.ok_or_else(|| no_host_view(op, kind))?;
    check_len("a host view of a shadow", n, h.len())?;
    Ok(h)
}

pub(super) fn host_of_mut<M: ShadowMemory + ?Sized>(
    op: Op,
    m: &mut M,
    n: usize,
) -> Result<&mut [M::Elem]> {
    let kind = m.kind();
    let h = m.host_mut()?.ok_or_else(|| no_host_view(op, kind))?;
    check_len("a host view of a shadow", n, h.len())?;
    Ok(h)
}

fn no_host_view(op: Op, kind: crate::MemoryKind) -> Error {
    unsupported(
        op,
        kind,
        kind,
        "device memory needs a CUDA stream: name the copy's stream with `#[stream]`",
    )
}

/// The host loops. `same`: `acc` and the source are the same memory.
pub(super) fn run<A, B>(op: Op, n: usize, same: bool, acc: &mut A, src: Source<'_, B>) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    match src {
        Source::None => par::zero(host_of_mut(op, acc, n)?),
        _ if same && op == Op::AccumulateAndZero => {}
        _ if same => host_of_mut(op, acc, n)?
            .iter_mut()
            .for_each(|x| *x = A::Elem::add(*x, *x)),
        Source::Read(b) => add(host_of_mut(op, acc, n)?, host_of(op, b, n)?),
        Source::Take(b) => {
            let a = host_of_mut(op, acc, n)?;
            let s = host_of_mut(op, b, n)?;
            add(a, s);
            par::zero(s);
        }
    }
    Ok(())
}

/// `acc` device-reachable, the source host-only: the source is copied into pooled device memory,
/// added by the accumulate kernel, and (for `Take`) zeroed by the host once the copy has read it.
pub(super) fn stage_in<A, B>(
    s: &CudaStream,
    op: Op,
    n: usize,
    acc: &mut A,
    src: Source<'_, B>,
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let bytes = n * size_of::<A::Elem>();
    {
        let b = src.get().ok_or_else(|| {
            unsupported(
                op,
                acc.kind(),
                crate::MemoryKind::Host,
                "a staged route needs a source",
            )
        })?;
        let h = host_of(op, b, n)?;
        let acc_kind = acc.kind();
        let a = acc.device_mut(s).ok_or_else(|| {
            unsupported(op, acc_kind, crate::MemoryKind::Host, "no device address")
        })?;
        if bytes >= pipeline::MIN_BYTES {
            // SAFETY: `a` holds `n` elements ordered on `s`; host-only memory cannot overlap it.
            unsafe { pipeline::stage_in(s, a.addr(), h)? };
        } else {
            // The source is copied by the host into pooled page-locked memory, which the kernel
            // reads in place: nothing reads the borrowed `h` once this returns.
            let stage = Lease::pinned_copy_of(h, s)?;
            // SAFETY: `a` holds `n` elements ordered on `s`; the staging buffer holds `n`
            // elements of page-locked memory, reachable by kernels at its host address.
            unsafe { kernels::accumulate(s, A::Elem::DTYPE, a.addr(), stage.ptr(), n, false)? };
        }
    }
    if let Source::Take(b) = src {
        // The copy may still be reading a page-locked source: wait for it, then zero.
        s.synchronize()
            .map_err(driver("cuStreamSynchronize (host source zeroing)"))?;
        par::zero(host_of_mut(op, b, n)?);
    }
    Ok(())
}

/// `acc` host-only, the source device-reachable: the source is copied into pooled pinned memory,
/// added on the host once the stream has reached the copy, then (for `Take`) zeroed on the stream.
pub(super) fn stage_out<A, B>(
    s: &CudaStream,
    op: Op,
    n: usize,
    acc: &mut A,
    src: Source<'_, B>,
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let bytes = n * size_of::<A::Elem>();
    let src_kind = src.get().map_or(crate::MemoryKind::Device, |b| b.kind());
    let no_address = || unsupported(op, crate::MemoryKind::Host, src_kind, "no device address");
    let mut src = src;
    {
        let d = match &mut src {
            Source::Read(b) => b.device(s),
            Source::Take(b) => b.device_mut(s),
            Source::None => None,
        }
        .ok_or_else(no_address)?;
        if bytes >= pipeline::MIN_BYTES {
            let a = host_of_mut(op, acc, n)?;
            // SAFETY: `d` holds `n` elements, ordered on `s`.
            unsafe { pipeline::stage_out(s, a, d.addr())? };
        } else {
            let stage = Lease::new(Memory::PinnedHost, bytes, s, s)?;
            // SAFETY: the lease holds at least `bytes` of pinned memory; `d` holds `n` elements.
            unsafe { kernels::copy_dtoh(s, stage.ptr() as *mut u8, d.addr(), bytes)? };
            s.synchronize()
                .map_err(driver("cuStreamSynchronize (device to host accumulation)"))?;
            let a = host_of_mut(op, acc, n)?;
            // SAFETY: the stream is synchronised, so the staging buffer holds the `n` source
            // elements; it is pinned host memory of at least `bytes`, aligned for every element
            // type (page-aligned).
            let staged = unsafe { core::slice::from_raw_parts(stage.ptr() as *const A::Elem, n) };
            add(a, staged);
        }
    }
    if let Source::Take(b) = src {
        let d = b.device_mut(s).ok_or_else(no_address)?;
        // SAFETY: `d` holds `n` elements, ordered on `s` after the copies above.
        unsafe { kernels::zero(s, d.addr(), bytes)? };
    }
    Ok(())
}

pub(super) fn add<T: Differentiable>(acc: &mut [T], src: &[T]) {
    par::add(acc, src);
}

/// `acc += src; src ← 0` with `acc` device-reachable and `src` large page-locked memory: see
/// [`pipeline::take_pinned`].
pub(super) fn take_pinned<A, B>(
    s: &CudaStream,
    op: Op,
    n: usize,
    acc: &mut A,
    src: &mut B,
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let (acc_kind, src_kind) = (acc.kind(), src.kind());
    let no_address = || unsupported(op, acc_kind, src_kind, "no device address");
    let a = acc.device_mut(s).ok_or_else(no_address)?;
    // The source's device address, ordered after its pending work; the work enqueued on it here
    // is waited for before returning, so its guard (which would record that work on the buffer,
    // and make the host view below wait for all of it) is not kept.
    let from = src.device_mut(s).ok_or_else(no_address)?.unguarded();
    let h = host_of_mut(op, src, n)?;
    // SAFETY: `a` and `from` hold `n` elements ordered on `s`, disjoint (checked when planned);
    // `h` is the same page-locked memory as `from`, seen from the host.
    unsafe { pipeline::take_pinned(s, a.addr(), from, h) }
}
