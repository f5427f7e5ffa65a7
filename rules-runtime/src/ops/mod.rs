//! The shadow operations: `accumulate`, `zero` and the fused `accumulate_and_zero`, for every pair
//! of memory kinds and across CUDA contexts. This module is the one face for shadow work, and the
//! one place that decides where it runs:
//!
//! 1. `plan` checks everything (lengths, memory kinds, the stream, contexts, overlap) and picks
//!    the `Route` once: host loops, one stream, staged through host memory, or another context.
//!    Nothing is written.
//! 2. `Plan::run` does the work on that route: the host loops in `host`, kernels and staging
//!    through `device`, or the cross-context paths in `cross`. Where a step can still
//!    fail after the first write (a driver call), the zeroing of the source comes last.
//!
//! The copy rules plan every lane before running any, so a bad lane changes nothing.

pub(crate) mod cross;
pub use on::{AsStream, On};
pub use saved::{SavedRegion, restore_region, save_region};
pub use sum::{accumulate_sum_region, sum_region};
pub(crate) mod array;
mod host;
mod on;
mod par;
mod pipeline;
pub mod region;
mod saved;
mod sum;

use crate::cuda::{driver, require_driver};
use crate::device::kernels;
use crate::element::Differentiable;
use crate::error::{Error, Result, check_len};
use crate::memory::{MemoryKind, Overlap, Region, ShadowMemory, ShadowRead};
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// `acc += src`, element-wise, on the stream `on` names. Lengths must match; `acc` and `src` may
/// live in any memory kinds and, for device memory, on different CUDA contexts (devices).
///
/// If `acc` and `src` are the same memory, `acc` is doubled; a partial overlap is refused.
/// Everything is checked before anything is written.
///
/// Device-reachable operands are only enqueued. With host memory the host does part of the work,
/// and the call returns once that part is done: always for pageable memory, and for page-locked
/// memory from 8 MiB per operand (the host adds into a page-locked `acc` what the copy engine
/// brings over, pipelined with the link), except during a graph capture, where every
/// device-reachable route stays one kernel.
pub fn accumulate<A, B>(on: On<'_>, acc: &mut A, src: &B) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    let src = ReadOnly(src);
    plan(on, Op::Accumulate, &*acc, Some(&src))?.run(acc, Source::Read(&src))
}

/// A read-only source seen as [`ShadowMemory`] that hands out no writable view: the operations
/// take `Source::Read` for it, which never asks for one.
struct ReadOnly<'b, B: ?Sized>(&'b B);

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
    fn device<'a>(&'a self, stream: &'a CudaStream) -> Option<crate::memory::DeviceAddr<'a>> {
        self.0.device(stream)
    }
    fn array(&self) -> Option<crate::memory::array::ArrayRef<'_>> {
        self.0.array()
    }
}

// SAFETY: no writable view is ever handed out.
unsafe impl<B: ShadowRead + ?Sized> ShadowMemory for ReadOnly<'_, B> {
    fn host_mut(&mut self) -> Result<Option<&mut [B::Elem]>> {
        Ok(None)
    }
    fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<crate::memory::DeviceAddr<'a>> {
        None
    }
}

/// `buf ← 0`, on the stream `on` names (on `buf`'s own context if that is another one).
pub fn zero<A: ShadowMemory + ?Sized>(on: On<'_>, buf: &mut A) -> Result<()> {
    plan::<A, A>(on, Op::Zero, &*buf, None)?.run::<A, A>(buf, Source::None)
}

/// `acc += src; src ← 0` in one pass (one kernel launch for device data): the reverse of a copy
/// `src → acc`'s destination. `acc` and `src` may live in any memory kinds and on different
/// CUDA contexts.
///
/// If `acc` and `src` are the same memory this is the identity (the reverse of a self-copy keeps
/// its cotangent); a partial overlap is refused before anything is written.
///
/// As for [`accumulate`], host memory gives the host a share of the work and the call returns once
/// it is done; for a page-locked `src` of 8 MiB or more that share is zeroing it, chunk by chunk
/// behind the kernel that reads it, instead of writing zeros over the link. If a driver call fails
/// midway through such a pipeline, every chunk is either moved whole (added and zeroed) or left as
/// it was.
pub fn accumulate_and_zero<A, B>(on: On<'_>, acc: &mut A, src: &mut B) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    plan(on, Op::AccumulateAndZero, &*acc, Some(&*src))?.run(acc, Source::Take(src))
}

/// Per-operand size from which `accumulate_and_zero` with both operands in device memory is the
/// accumulate kernel followed by a driver memset instead of the one fused launch. Below it,
/// saving a launch is what counts; above it, the driver's memset writes faster than a kernel that
/// mixes reads and writes (measurements in the README).
pub const FUSED_SPLIT_BYTES: usize = 32 << 20;

/// Per-operand size from which the zeroing half of that split is a kernel of streaming stores
/// instead of the driver's memset: right after the accumulate kernel it was the faster of the two
/// from 128 MiB, and the slower at 32-64 MiB (docs/performance.md).
pub const STREAMING_ZERO_BYTES: usize = 128 << 20;

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `acc += src`.
    Accumulate,
    /// `acc += src; src ← 0`.
    AccumulateAndZero,
    /// `acc ← 0` (no source).
    Zero,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Accumulate => "accumulate",
            Op::AccumulateAndZero => "accumulate_and_zero",
            Op::Zero => "zero",
        }
    }
}

/// The source operand as the work needs it.
pub(crate) enum Source<'b, B: ?Sized> {
    None,
    Read(&'b B),
    Take(&'b mut B),
}

impl<B: ShadowRead + ?Sized> Source<'_, B> {
    fn get(&self) -> Option<&B> {
        match self {
            Source::None => None,
            Source::Read(b) => Some(b),
            Source::Take(b) => Some(b),
        }
    }
}

/// A stream named by the caller, or one found on a buffer (kept alive here).
#[derive(Clone)]
pub(crate) enum StreamRef<'s> {
    Borrowed(&'s CudaStream),
    Owned(Arc<CudaStream>),
}

impl core::ops::Deref for StreamRef<'_> {
    type Target = CudaStream;
    fn deref(&self) -> &CudaStream {
        match self {
            StreamRef::Borrowed(s) => s,
            StreamRef::Owned(s) => s,
        }
    }
}

/// Where one operation runs.
pub(crate) enum Route<'s> {
    /// Nothing to write: no elements, or the reverse of a self-copy.
    Nothing,
    /// Host loops, after the work queued on the stream (if any) has finished.
    Host { after: Option<StreamRef<'s>> },
    /// Every operand reachable by kernels of the stream's device: one launch (or a memset).
    Device { stream: StreamRef<'s> },
    /// A device-reachable accumulator and a host-only source: the source is staged into pooled
    /// device memory.
    StageIn { stream: StreamRef<'s> },
    /// A host-only accumulator and a device-reachable source: the source is staged into pooled
    /// pinned memory and added on the host.
    StageOut { stream: StreamRef<'s> },
    /// A device-reachable accumulator and a large page-locked source taken: the kernel reads the
    /// source in place and the host zeroes it, chunk by chunk.
    TakePinned { stream: StreamRef<'s> },
    /// A device operand on another context than the stream's.
    Cross(Box<cross::Cross<'s>>),
}

/// One checked operation, ready to run.
pub(crate) struct Plan<'s> {
    op: Op,
    n: usize,
    /// `acc` and the source are the same memory (`Accumulate` doubles).
    same: bool,
    route: Route<'s>,
}

/// The facts about one operand that routing needs.
#[derive(Clone, Copy)]
pub(crate) struct Operand<'m> {
    what: &'static str,
    kind: MemoryKind,
    home: Option<&'m Arc<CudaStream>>,
    ctx: Option<&'m Arc<CudaContext>>,
    region: Option<Region>,
    elem_size: usize,
}

impl<'m> Operand<'m> {
    fn of<M: ShadowRead + ?Sized>(what: &'static str, m: &'m M, with_region: bool) -> Self {
        Operand {
            what,
            kind: m.kind(),
            home: m.home_stream(),
            ctx: m.context(),
            region: with_region.then(|| m.region()),
            elem_size: size_of::<M::Elem>(),
        }
    }
}

/// Checks an operation on `acc` (and `src`) and decides its route. Nothing is written.
pub(crate) fn plan<'s, A, B>(on: On<'s>, op: Op, acc: &A, src: Option<&B>) -> Result<Plan<'s>>
where
    A: ShadowRead + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    let n = acc.len();
    if let Some(b) = src
        && b.len() != n
    {
        check_len(format!("the source of `{}`", op.name()), n, b.len())?;
    }
    // Device memory on one stream: the hot path. Its aliasing is judged on the launch addresses
    // (asking a cudarc buffer for its region costs its event waits), still before any write.
    let device_only =
        acc.kind() == MemoryKind::Device && src.is_none_or(|b| b.kind() == MemoryKind::Device);
    let a = Operand::of("the accumulator", acc, !device_only);
    let pair;
    let ops: &[Operand<'_>] = match src {
        Some(b) => {
            pair = [a, Operand::of("the source", b, !device_only)];
            &pair
        }
        None => core::slice::from_ref(&a),
    };
    plan_with(stream_for(on, ops)?, op, ops, acc, src)?.host_share(ops)
}

/// [`plan`] once the stream is known (`None`: no device memory, no stream named).
pub(crate) fn plan_with<'s, A, B>(
    stream: Option<StreamRef<'s>>,
    op: Op,
    ops: &[Operand<'_>],
    acc: &A,
    src: Option<&B>,
) -> Result<Plan<'s>>
where
    A: ShadowRead + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    let n = acc.len();
    for o in ops {
        if o.kind == MemoryKind::Array {
            return Err(Error::UnsupportedKinds {
                op: op.name(),
                dst: acc.kind(),
                src: src.map_or(acc.kind(), |b| b.kind()),
                why: "CUDA array memory is reached through boxes: use the region operations (`accumulate_region`, `zero_region`, ...) with a box of the array",
            });
        }
    }
    let same = match (
        ops.first().and_then(|o| o.region),
        ops.get(1).and_then(|o| o.region),
    ) {
        (Some(x), Some(y)) => match x.relation(y) {
            Overlap::Partial => return Err(Error::partial_overlap(op.name(), x, y)),
            Overlap::Same => true,
            Overlap::Disjoint => false,
        },
        _ => false,
    };
    let nothing = n == 0 || (same && op == Op::AccumulateAndZero);
    let route = match stream {
        _ if nothing => Route::Nothing,
        None => Route::Host { after: None },
        Some(s) => {
            require_driver()?;
            match cross::plan(&s, op, ops, acc, src)? {
                Some(c) => Route::Cross(Box::new(c)),
                None => local_route(s, ops)?,
            }
        }
    };
    refuse_in_capture(op, &route)?;
    Ok(Plan { op, n, same, route })
}

/// A route that waits on the host (host memory, staging) or forks work to other streams (another
/// context) cannot be recorded into a CUDA graph: while its stream is capturing it is refused with
/// [`Error::Capturing`] before anything is enqueued, so the capture itself stays intact. Device
/// routes are one kernel or memset on the stream, which capture records like any other launch;
/// they are not asked (the hot path stays one launch).
fn refuse_in_capture(op: Op, route: &Route<'_>) -> Result<()> {
    let s: &CudaStream = match route {
        Route::Host { after: Some(s) }
        | Route::StageIn { stream: s }
        | Route::StageOut { stream: s }
        | Route::TakePinned { stream: s } => s,
        Route::Cross(c) => c.stream(),
        Route::Nothing | Route::Host { after: None } | Route::Device { .. } => return Ok(()),
    };
    if capturing(s)? {
        Err(Error::Capturing { op: op.name() })
    } else {
        Ok(())
    }
}

/// Whether `s` is being captured into a CUDA graph.
pub(crate) fn capturing(s: &CudaStream) -> Result<bool> {
    let _current = crate::device::pool::CurrentContext::save();
    let status = s.capture_status().map_err(driver("cuStreamIsCapturing"))?;
    Ok(status != cudarc::driver::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// The stream the work is ordered on: the one `on` names; for [`On::Host`], the own stream of a
/// device buffer among the operands (none if there is no device memory).
fn stream_for<'s>(on: On<'s>, ops: &[Operand<'_>]) -> Result<Option<StreamRef<'s>>> {
    if let On::Stream(s) = on {
        return Ok(Some(StreamRef::Borrowed(s)));
    }
    // The first device operand decides: its own stream, or none (a raw device pointer).
    match ops.iter().find(|o| o.kind == MemoryKind::Device) {
        None => Ok(None),
        Some(Operand { home: Some(h), .. }) => Ok(Some(StreamRef::Owned((*h).clone()))),
        Some(o) => Err(Error::NoStream(o.what.to_string())),
    }
}

/// The route when every operand with a context lives on the stream's context.
fn local_route<'s>(stream: StreamRef<'s>, ops: &[Operand<'_>]) -> Result<Route<'s>> {
    let here = stream.context().cu_ctx();
    for o in ops {
        if let Some(c) = o.ctx
            && c.cu_ctx() != here
        {
            return Err(Error::ContextMismatch {
                what: o.what.to_string(),
                expected: stream.context().ordinal(),
                found: c.ordinal(),
            });
        }
    }
    let on_device = |o: &Operand<'_>| o.kind.device_accessible();
    Ok(match ops {
        [a] if on_device(a) => Route::Device { stream },
        [a, b] if on_device(a) && on_device(b) => Route::Device { stream },
        [a, _] if on_device(a) => Route::StageIn { stream },
        [_, b] if on_device(b) => Route::StageOut { stream },
        _ => Route::Host {
            after: Some(stream),
        },
    })
}

impl Plan<'_> {
    /// A whole-buffer operation of at least [`pipeline::MIN_BYTES`] on page-locked memory, outside
    /// a graph capture, gives the host its share instead of a second pass over the link: the host
    /// zeroes a pinned source ([`Route::TakePinned`]), adds into a pinned accumulator
    /// ([`Route::StageOut`]), or does everything when both are pinned ([`Route::Host`]). Each
    /// returns once the host's share is done. Region operations keep the device route.
    fn host_share(mut self, ops: &[Operand<'_>]) -> Result<Self> {
        let Route::Device { stream } = &self.route else {
            return Ok(self);
        };
        let (Some(a), Some(b)) = (ops.first(), ops.get(1)) else {
            return Ok(self);
        };
        let elem = a.elem_size;
        if self.n.saturating_mul(elem) < pipeline::MIN_BYTES {
            return Ok(self);
        }
        use MemoryKind::{Device, Pinned, Unified};
        let share = match (a.kind, b.kind, self.op) {
            (Pinned, Pinned, _) => 0,
            (Device | Unified, Pinned, Op::AccumulateAndZero) => 1,
            (Pinned, Device | Unified, _) => 2,
            _ => return Ok(self),
        };
        // A capture records device work only: the one-kernel route stays.
        if capturing(stream)? {
            return Ok(self);
        }
        let stream = stream.clone();
        self.route = match share {
            0 => Route::Host {
                after: Some(stream),
            },
            1 => Route::TakePinned { stream },
            _ => Route::StageOut { stream },
        };
        Ok(self)
    }

    /// Runs the planned operation on the buffers it was planned for.
    pub(crate) fn run<A, B>(self, acc: &mut A, src: Source<'_, B>) -> Result<()>
    where
        A: ShadowMemory + ?Sized,
        B: ShadowMemory<Elem = A::Elem> + ?Sized,
    {
        let Plan { op, n, same, route } = self;
        match route {
            Route::Nothing => Ok(()),
            Route::Host { after } => {
                if let Some(s) = after {
                    s.synchronize()
                        .map_err(driver("cuStreamSynchronize (host shadow work)"))?;
                }
                host::run(op, n, same, acc, src)
            }
            Route::Device { stream } => on_device(&stream, op, n, acc, src),
            Route::StageIn { stream } => host::stage_in(&stream, op, n, acc, src),
            Route::StageOut { stream } => host::stage_out(&stream, op, n, acc, src),
            Route::TakePinned { stream } => match src {
                Source::Take(b) => host::take_pinned(&stream, op, n, acc, b),
                _ => unreachable!("planned for a taken source only"),
            },
            Route::Cross(c) => c.run(acc, src),
        }
    }
}

/// Both operands device-reachable, work on stream `s`. The addresses are taken once (for cudarc
/// buffers that is also where cudarc orders them against other streams), aliasing is judged on
/// them, and one launch follows; nothing is launched on a partial overlap.
fn on_device<A, B>(s: &CudaStream, op: Op, n: usize, acc: &mut A, src: Source<'_, B>) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let bytes = n * size_of::<A::Elem>();
    let dtype = A::Elem::DTYPE;
    let (acc_kind, src_kind) = (acc.kind(), src.get().map_or(acc.kind(), |b| b.kind()));
    let no_address = |src_kind| Error::UnsupportedKinds {
        op: op.name(),
        dst: acc_kind,
        src: src_kind,
        why: "no device address",
    };
    // The split pays off only in device memory; across the host link (pinned, unified memory)
    // one fused pass moves the reads and the zero writes in both directions at once.
    let in_device_memory = acc_kind == MemoryKind::Device && src_kind == MemoryKind::Device;
    let mut src = src;
    let b = match &mut src {
        Source::None => None,
        Source::Read(b) => Some(b.device(s).ok_or_else(|| no_address(src_kind))?),
        Source::Take(b) => Some(b.device_mut(s).ok_or_else(|| no_address(src_kind))?),
    };
    let Some(a) = acc.device_mut(s) else {
        return Err(no_address(src_kind));
    };
    let Some(b) = b else {
        // SAFETY: `a` holds `n` elements (`bytes` bytes), ordered on `s`.
        return unsafe { kernels::zero(s, a.addr(), bytes) };
    };
    let (pa, pb) = (a.addr(), b.addr());
    let (ra, rb) = (Region::of::<A::Elem>(pa, n), Region::of::<A::Elem>(pb, n));
    // SAFETY (all launches below): `pa` and `pb` are device addresses of `n` elements each,
    // ordered on `s`; they are disjoint, or the same memory where a thread reads each element
    // before writing it.
    unsafe {
        match (ra.relation(rb), op) {
            (Overlap::Partial, _) => Err(Error::partial_overlap(op.name(), ra, rb)),
            (Overlap::Same, Op::AccumulateAndZero) => Ok(()),
            (Overlap::Same, _) => kernels::accumulate(s, dtype, pa, pa, n, false),
            (Overlap::Disjoint, Op::AccumulateAndZero)
                if bytes >= FUSED_SPLIT_BYTES && in_device_memory =>
            {
                kernels::accumulate(s, dtype, pa, pb, n, false)?;
                if bytes >= STREAMING_ZERO_BYTES {
                    kernels::zero_streaming(s, pb, bytes)
                } else {
                    kernels::zero(s, pb, bytes)
                }
            }
            (Overlap::Disjoint, Op::AccumulateAndZero) => {
                kernels::accumulate(s, dtype, pa, pb, n, true)
            }
            (Overlap::Disjoint, _) => kernels::accumulate(s, dtype, pa, pb, n, false),
        }
    }
}

#[cfg(test)]
mod tests;
