//! Shadow work across CUDA contexts: the reverse of a peer copy `dst (device B) ← src (device A)`
//! accumulates `d_dst`, which lives on B, into `d_src`, which lives on A.
//!
//! The work is forked from the copy's stream and joined back into it with events, so whatever is
//! queued on the copy's stream afterwards sees the result, and nothing waits on the host:
//!
//! - every device operand on one other context (the others host memory): the operation runs on a
//!   stream of that context (a buffer's own stream, else the cache's helper stream there);
//! - device operands on two contexts: the source is copied with `cuMemcpyPeerAsync`, on a stream
//!   of its own context, into pooled staging memory on the accumulator's context; a stream of that
//!   context waits for it and adds the staged values with the accumulate kernel; then (for
//!   `accumulate_and_zero`) the source is zeroed on its own stream, after the copy has read it.
//!
//! No peer access is needed: the driver stages peer copies itself between devices that have none.
//! cudarc buffers name their context. A raw device pointer is asked for its device
//! (`CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`) when there is more than one; one on another device
//! than the stream's is routed through that device's primary context.

use super::{Op, Operand, Plan, Source, StreamRef, plan_with};
use crate::device::kernels;
use crate::driver::driver;
use crate::driver::pool::{self, Lease, Memory};
use crate::error::{Error, Result};
use crate::memory::view::{DevMut, DevRef};
use crate::memory::{MemoryKind, ShadowMemory, ShadowRead};
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::{Arc, OnceLock};

/// A checked operation whose device memory lives elsewhere than the copy's stream.
pub(crate) struct Cross<'s> {
    /// The copy's stream: forked from and joined into.
    stream: StreamRef<'s>,
    how: How<'s>,
}

enum How<'s> {
    /// The whole operation on stream `h` of another context.
    Elsewhere {
        h: Arc<CudaStream>,
        inner: Plan<'static>,
    },
    /// `acc` on context `a` (stream `ha`), the source on context `b` (stream `hb`).
    Staged {
        ha: StreamRef<'s>,
        hb: StreamRef<'s>,
        op: Op,
        n: usize,
    },
}

/// The context each device operand lives on; `None` when every one lives on `s`'s context
/// (the local routes apply). Checks everything the cross-context work needs.
pub(super) fn plan<'s, A, B>(
    s: &StreamRef<'s>,
    op: Op,
    ops: &[Operand<'_>],
    acc: &A,
    src: Option<&B>,
) -> Result<Option<Cross<'s>>>
where
    A: ShadowRead + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    let here = s.context();
    let ca = device_context(&ops[0], || acc.region().start, here)?;
    let cb = match (ops.get(1), src) {
        (Some(o), Some(b)) => device_context(o, || b.region().start, here)?,
        _ => None,
    };
    let away = |c: &Option<Arc<CudaContext>>| c.as_ref().is_some_and(|c| !same(c, here));
    if !away(&ca) && !away(&cb) {
        return Ok(None);
    }
    let homes = [ops[0].home, ops.get(1).and_then(|o| o.home)];
    let how = match (ca, cb) {
        (Some(a), Some(b)) if !same(&a, &b) => {
            // The copy's stream serves the context it belongs to; the other side gets one of its
            // own.
            let on = |c: &Arc<CudaContext>, home| -> Result<StreamRef<'s>> {
                Ok(if same(c, here) {
                    s.clone()
                } else {
                    StreamRef::Owned(stream_on(c, home)?)
                })
            };
            How::Staged {
                ha: on(&a, homes[0])?,
                hb: on(&b, homes[1])?,
                op,
                n: acc.len(),
            }
        }
        (Some(c), _) | (_, Some(c)) => {
            let home = homes.into_iter().flatten().find(|h| same(h.context(), &c));
            let h = stream_on(&c, home)?;
            let inner = plan_with(Some(StreamRef::Owned(h.clone())), op, ops, acc, src)?;
            How::Elsewhere { h, inner }
        }
        (None, None) => return Ok(None),
    };
    Ok(Some(Cross {
        stream: s.clone(),
        how,
    }))
}

impl Cross<'_> {
    /// The copy's stream.
    pub(crate) fn stream(&self) -> &CudaStream {
        &self.stream
    }

    pub(super) fn run<A, B>(self, acc: &mut A, src: Source<'_, B>) -> Result<()>
    where
        A: ShadowMemory + ?Sized,
        B: ShadowMemory<Elem = A::Elem> + ?Sized,
    {
        let s = &*self.stream;
        match self.how {
            How::Elsewhere { h, inner } => {
                order(s, &h)?;
                let r = inner.run(acc, src);
                order(&h, s)?;
                r
            }
            How::Staged { ha, hb, op, n } => staged(s, &ha, &hb, op, n, acc, src),
        }
    }
}

/// `acc (context of ha) += src (context of hb)` and, for `AccumulateAndZero`, `src ← 0`, through
/// pooled staging on `acc`'s context. Lengths already agree.
fn staged<A, B>(
    s: &CudaStream,
    ha: &CudaStream,
    hb: &CudaStream,
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
    let no_address = || Error::UnsupportedKinds {
        op: op.name(),
        dst: MemoryKind::Device,
        src: MemoryKind::Device,
        why: "no device address",
    };
    let mut stage = Lease::new(Memory::Device, bytes, hb, ha)?;
    order(s, hb)?;
    let mut src = src;
    let work = (|| -> Result<()> {
        {
            let from = match &mut src {
                Source::Read(b) => DevRef::of(*b, hb),
                Source::Take(b) => DevRef::of(&**b, hb),
                Source::None => None,
            }
            .ok_or_else(no_address)?;
            kernels::copy_peer(hb, &mut stage.view_mut(n)?, ha.context(), &from)?;
        }
        order(hb, ha)?;
        {
            let mut a = DevMut::of(acc, ha).ok_or_else(no_address)?;
            kernels::accumulate(ha, &mut a, &stage.view(n)?)?;
        }
        if let Source::Take(b) = &mut src {
            // Ordered on `hb` after the peer copy that read it.
            let mut d = DevMut::of(&mut **b, hb).ok_or_else(no_address)?;
            kernels::zero(hb, &mut d, false)?;
        }
        Ok(())
    })();
    // Joined back into the copy's stream even after a failure.
    let joined = order(hb, s).and_then(|()| order(ha, s));
    drop(stage);
    work.and(joined)
}

fn same(a: &CudaContext, b: &CudaContext) -> bool {
    a.cu_ctx() == b.cu_ctx()
}

/// The context a device operand lives on (`None` for memory that is not device memory). A raw
/// device pointer on the device of `here` counts as living on `here`.
fn device_context(
    o: &Operand<'_>,
    address: impl FnOnce() -> u64,
    here: &Arc<CudaContext>,
) -> Result<Option<Arc<CudaContext>>> {
    if o.kind != MemoryKind::Device {
        return Ok(None);
    }
    if let Some(c) = o.ctx {
        return Ok(Some(c.clone()));
    }
    if device_count() <= 1 {
        // With one device every device pointer is on `here`'s device: no driver query.
        return Ok(Some(here.clone()));
    }
    let ordinal = crate::device::peer::pointer_ordinal(address());
    match ordinal {
        Some(o) if o != here.ordinal() => Ok(Some(crate::driver::context(o)?)),
        // Unknown to the driver, or on this device: the local routes decide.
        _ => Ok(Some(here.clone())),
    }
}

/// How many CUDA devices there are (asked once; 0 when the driver cannot say).
fn device_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT
        .get_or_init(|| CudaContext::device_count().map_or(0, |c| usize::try_from(c).unwrap_or(0)))
}

/// A stream of `ctx` for routed work: `home` if given, else the cache's helper stream there.
fn stream_on(ctx: &Arc<CudaContext>, home: Option<&Arc<CudaStream>>) -> Result<Arc<CudaStream>> {
    match home {
        Some(h) => Ok(h.clone()),
        None => pool::helper_stream(ctx),
    }
}

/// `to` waits for the work queued so far on `from`.
fn order(from: &CudaStream, to: &CudaStream) -> Result<()> {
    if from.cu_stream() == to.cu_stream() && same(from.context(), to.context()) {
        return Ok(());
    }
    let e = from
        .record_event(None)
        .map_err(driver("cuEventRecord (cross-context ordering)"))?;
    to.wait(&e)
        .map_err(driver("cuStreamWaitEvent (cross-context ordering)"))
}
