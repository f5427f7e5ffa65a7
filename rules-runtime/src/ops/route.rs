//! The routing of shadow work: [`plan`] checks an operation (lengths, memory kinds, the stream,
//! contexts, overlap, a graph capture) and picks its [`Route`] once, without writing anything;
//! [`Plan::run`] then does the work on that route. The one-launch path for device-reachable
//! operands is here too, as it is what most plans end in.

use super::{FUSED_SPLIT_BYTES, On, Op, STREAMING_ZERO_BYTES, Source, cross, host};
use crate::device::kernels;
use crate::device::pipeline;
use crate::driver::probe;
use crate::driver::{capturing, driver, require_driver};
use crate::error::{Error, Result, check_len};
use crate::memory::view::{DevMut, DevRef};
use crate::memory::{MemoryKind, Overlap, Region, ShadowMemory, ShadowRead};
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

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

/// One checked operation, ready to run. The region operations take only its `route` (they run
/// their boxes themselves).
pub(crate) struct Plan<'s> {
    op: Op,
    n: usize,
    /// `acc` and the source are the same memory (`Accumulate` doubles).
    same: bool,
    pub(super) route: Route<'s>,
}

/// The facts about one operand that routing needs. The cross-context and region paths
/// (`cross`, `region`) build and read them too, hence the `pub(super)` parts.
#[derive(Clone, Copy)]
pub(crate) struct Operand<'m> {
    what: &'static str,
    pub(super) kind: MemoryKind,
    pub(super) home: Option<&'m Arc<CudaStream>>,
    pub(super) ctx: Option<&'m Arc<CudaContext>>,
    region: Option<Region>,
    elem_size: usize,
}

impl<'m> Operand<'m> {
    pub(super) fn of<M: ShadowRead + ?Sized>(
        what: &'static str,
        m: &'m M,
        with_region: bool,
    ) -> Self {
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
    let _p = probe::span("ops::plan");
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

/// Refuses a whole rule call, before anything runs (the primal included), when its stream is
/// being captured into a CUDA graph and the call has something a capture cannot record (`needs`):
/// pageable host memory (a copy from or to it would be recorded as a host-synchronous node, or
/// run by the host), a `restore` (its saved box lives in pooled memory ordered by events), or a
/// CUDA array (staged through pooled memory). `what` names it in [`Error::Capturing`].
///
/// With no stream named ([`On::Host`]) the work is ordered on a device buffer's own stream
/// (`home`, if the call has one), which is the one asked.
pub(crate) fn refuse_call_in_capture(
    on: On<'_>,
    home: Option<&CudaStream>,
    what: &'static str,
    needs: bool,
) -> Result<()> {
    let stream = match on {
        On::Stream(s) => Some(s),
        On::Host => home,
    };
    if let (true, Some(s)) = (needs, stream)
        && capturing(s)?
    {
        return Err(Error::Capturing { op: what });
    }
    Ok(())
}

/// The stream the work is ordered on: the one `on` names; for [`On::Host`], the own stream of a
/// device buffer among the operands (none if there is no device memory).
pub(super) fn stream_for<'s>(on: On<'s>, ops: &[Operand<'_>]) -> Result<Option<StreamRef<'s>>> {
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
        let _p = probe::span("Plan::run");
        let Plan { op, n, same, route } = self;
        // The plan was made on shared views of the buffers; the work runs on these, which the
        // caller says are the same buffers. What is launched is checked against what is written
        // through, so a buffer whose length changed since (or an implementation that answers
        // differently for its two views) is an error, never an access past its end.
        let unplanned = |what: &str, found: usize| Error::LengthMismatch {
            what: format!("{what} of `{}`", op.name()),
            expected: n,
            found,
        };
        if acc.len() != n {
            return Err(unplanned("the accumulator", acc.len()));
        }
        if let Some(b) = src.get()
            && b.len() != n
        {
            return Err(unplanned("the source", b.len()));
        }
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
                // Planned for a taken source only; the plan and the call disagree.
                _ => Err(Error::UnsupportedKinds {
                    op: op.name(),
                    dst: acc.kind(),
                    src: MemoryKind::Pinned,
                    why: "the plan was made for a source to take, and none was given",
                }),
            },
            Route::Cross(c) => c.run(acc, src),
        }
    }
}

/// Both operands device-reachable, work on stream `s`. The views are taken once (for cudarc
/// buffers that is also where cudarc orders them against other streams), and the launches judge
/// lengths and aliasing on them: one launch follows, nothing on a partial overlap.
fn on_device<A, B>(s: &CudaStream, op: Op, n: usize, acc: &mut A, src: Source<'_, B>) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let bytes = n * size_of::<A::Elem>();
    let (acc_kind, src_kind) = (acc.kind(), src.get().map_or(acc.kind(), |b| b.kind()));
    let no_address = || Error::UnsupportedKinds {
        op: op.name(),
        dst: acc_kind,
        src: src_kind,
        why: "no device address",
    };
    // Measured in device memory only: unified and pinned memory keep the memset.
    let streaming = bytes >= STREAMING_ZERO_BYTES && acc_kind == MemoryKind::Device;
    match src {
        Source::None => {
            let mut a = DevMut::of(acc, s).ok_or_else(no_address)?;
            kernels::zero(s, &mut a, streaming)
        }
        Source::Read(b) => {
            let b = DevRef::of(b, s).ok_or_else(no_address)?;
            let mut a = DevMut::of(acc, s).ok_or_else(no_address)?;
            kernels::accumulate(s, &mut a, &b)
        }
        Source::Take(b) => {
            let views = probe::span("on_device: views (cudarc guards)");
            let mut b = DevMut::of(b, s).ok_or_else(no_address)?;
            let mut a = DevMut::of(acc, s).ok_or_else(no_address)?;
            drop(views);
            // The split pays off only in device memory; across the host link (pinned, unified
            // memory) one fused pass moves the reads and the zero writes in both directions at
            // once.
            let in_device_memory = acc_kind == MemoryKind::Device && src_kind == MemoryKind::Device;
            let how = if bytes >= FUSED_SPLIT_BYTES && in_device_memory {
                kernels::Zeroing::Split {
                    streaming: bytes >= STREAMING_ZERO_BYTES,
                }
            } else {
                kernels::Zeroing::Fused
            };
            kernels::accumulate_and_zero(s, &mut a, &mut b, how)
        }
    }
}
