//! Shadow work that touches host memory from the host: the plain loops, and the two staged
//! routes between host-only memory and device-reachable memory, through pooled buffers
//! ([`crate::driver::pool`]).
//!
//! A host slice may really be page-locked or managed memory (`pinned.as_mut_slice()` is a
//! `&mut [T]`), for which a host↔device copy is truly asynchronous. So no host buffer is written
//! (zeroed, or accumulated into) while a copy enqueued here may still read it: the stream is
//! synchronised first. Zeroing the source is always the last step.

use super::{Op, Source};
use crate::device::{kernels, pipeline};
use crate::driver::driver;
use crate::driver::pool::Lease;
use crate::element::Differentiable;
use crate::error::{Error, Result, check_len};
use crate::memory::view::{DevMut, DevRef};
use crate::memory::{MemoryKind, ShadowMemory, ShadowRead};
use crate::par;
use cudarc::driver::CudaStream;

fn unsupported(op: Op, dst: MemoryKind, src: MemoryKind, why: &'static str) -> Error {
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

fn no_host_view(op: Op, kind: MemoryKind) -> Error {
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

/// `acc` device-reachable, the source host-only: the host copies the source into pooled
/// page-locked memory, which the accumulate kernel reads in place, and (for `Take`) then zeroes
/// the source.
///
/// A source to take is read and zeroed by the host only once the stream's earlier work is done (a
/// host slice may be page-locked memory that an earlier asynchronous copy still reads). No work
/// enqueued here reads the source (the kernel reads the staged copy), so the zeroing does not wait
/// for the kernel: the one wait is before the host's read, on a stream that has usually nothing
/// left to do (a wait after the launch would cost the host a kernel's whole latency).
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
    let _p = crate::driver::probe::span("stage_in");
    let bytes = n * size_of::<A::Elem>();
    {
        let acc_kind = acc.kind();
        let unsupported = |why| unsupported(op, acc_kind, MemoryKind::Host, why);
        let b = src
            .get()
            .ok_or_else(|| unsupported("a staged route needs a source"))?;
        let h = host_of(op, b, n)?;
        let mut a = DevMut::of(acc, s).ok_or_else(|| unsupported("no device address"))?;
        if bytes >= pipeline::MIN_BYTES {
            pipeline::stage_in(s, &mut a, h)?;
        } else {
            // The source is copied by the host into pooled page-locked memory, which the kernel
            // reads in place: nothing reads the borrowed `h` once this returns. A source to take
            // is zeroed right after, so its read waits for the stream's earlier work first (the
            // wait the zeroing needs; the pipeline above waits itself before its first read).
            if matches!(src, Source::Take(_)) {
                s.synchronize()
                    .map_err(driver("cuStreamSynchronize (host source staging)"))?;
            }
            let lease = crate::driver::probe::span("stage_in: Lease::pinned_copy_of");
            let stage = Lease::pinned_copy_of(h, s)?;
            drop(lease);
            kernels::accumulate(s, &mut a, &stage.view(n)?)?;
        }
    }
    if let Source::Take(b) = src {
        let _p = crate::driver::probe::span("stage_in: host zero");
        // Read by the host only (above), after the stream's earlier work: zeroed now.
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
    let _p = crate::driver::probe::span("stage_out");
    let bytes = n * size_of::<A::Elem>();
    let src_kind = src.get().map_or(MemoryKind::Device, |b| b.kind());
    let no_address = || unsupported(op, MemoryKind::Host, src_kind, "no device address");
    let mut src = src;
    {
        let d = match &mut src {
            Source::Read(b) => DevRef::of(*b, s),
            Source::Take(b) => DevRef::of(&**b, s),
            Source::None => None,
        }
        .ok_or_else(no_address)?;
        if bytes >= pipeline::MIN_BYTES {
            pipeline::stage_out(s, host_of_mut(op, acc, n)?, &d)?;
        } else {
            let a = host_of_mut(op, acc, n)?;
            check_len("the source of a staged accumulate", n, d.len())?;
            pipeline::with_host_copy(s, &d, |staged| add(a, staged))?;
        }
    }
    if let Source::Take(b) = src {
        let mut d = DevMut::of(b, s).ok_or_else(no_address)?;
        kernels::zero(s, &mut d, false)?;
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
    let mut a = DevMut::of(acc, s)
        .ok_or_else(|| unsupported(op, acc_kind, src_kind, "no device address"))?;
    check_len("the accumulator", n, a.len())?;
    pipeline::take_pinned(s, &mut a, src)
}
