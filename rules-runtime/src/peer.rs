//! Shadow work across CUDA contexts: the reverse of a peer copy `dst (device B) ← src (device A)`
//! accumulates `d_dst`, which lives on B, into `d_src`, which lives on A.
//!
//! [`accumulate_and_zero`] and [`zero`] are the context-aware front of [`crate::ops`], and the
//! copy rules call them. When every device operand lives on the context of the copy's stream they
//! are exactly the operations of `ops`. Otherwise the work is routed, always forked from the copy's
//! stream and joined back into it with events, so that whatever is queued on the copy's stream
//! afterwards sees the result, and nothing waits on the host:
//!
//! - one device operand on another context (the other host-accessible, or on that same context):
//!   the `ops` operation runs on a stream of that context (the buffer's own stream for cudarc
//!   buffers, else a helper stream of the context);
//! - two device operands on different contexts: `d_dst` is copied with `cuMemcpyPeerAsync`, on a
//!   stream of its own context, into a staging buffer on the source's context (reused per copy
//!   context, never allocated per call), then zeroed there; a stream of the source's context waits
//!   for that and adds the staged values into `d_src` with the accumulate kernel.
//!
//! No peer access is needed: the driver stages peer copies itself between devices that have none.
//! [`enable_peer_access`] turns it on where the hardware allows it (faster primal peer copies), and
//! says [`Error::NoPeerAccess`] where it does not.
//!
//! cudarc buffers name their context. A raw device pointer (a pointer rule with `dst = device` or
//! `src = device`) is asked for its device (`CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`); one on another
//! device than the stream's is routed through that device's primary context.

use crate::cuda::{driver, require_driver};
use crate::error::{Error, Result};
use crate::memory::raw::RawShadow;
use crate::memory::{MemoryKind, ShadowMemory};
use crate::ops::{self, On};
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, sys};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// `acc += src; src ← 0`, where `acc` and `src` may live on different CUDA contexts (devices):
/// the reverse of a copy `src → acc`'s destination. Ordered on the stream `on` names (for
/// [`On::Host`], the stream of a cudarc buffer among the operands), as [`ops::accumulate_and_zero`].
///
/// On one context this *is* [`ops::accumulate_and_zero`]; across contexts see the module
/// documentation. Lengths are checked before anything is written.
pub fn accumulate_and_zero<A, B>(on: On<'_>, acc: &mut A, src: &mut B) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let Some(s) = copy_stream(on, &[acc.home_stream(), src.home_stream()]) else {
        return ops::accumulate_and_zero(on, acc, src);
    };
    let here = s.context().clone();
    let (ca, cb) = (device_context(acc, &here)?, device_context(src, &here)?);
    let away = |c: &Option<Arc<CudaContext>>| c.as_ref().is_some_and(|c| !same(c, &here));
    if !away(&ca) && !away(&cb) {
        return ops::accumulate_and_zero(on, acc, src);
    }
    ops::check_len("the source of `accumulate_and_zero`", acc.len(), src.len())?;
    match (ca, cb) {
        (Some(a), Some(b)) if !same(&a, &b) => staged(&s, acc, &a, src, &b),
        (Some(c), _) | (_, Some(c)) => {
            let home = home_on(&c, &[acc.home_stream(), src.home_stream()]);
            on_context(&s, &c, home, |h| {
                ops::accumulate_and_zero(On::Stream(h), acc, src)
            })
        }
        (None, None) => ops::accumulate_and_zero(on, acc, src),
    }
}

/// `buf ← 0` on the context `buf` lives on, ordered after the work on the stream `on` names (and
/// before the work queued there afterwards). On the stream's own context this is [`ops::zero`].
pub fn zero<A: ShadowMemory + ?Sized>(on: On<'_>, buf: &mut A) -> Result<()> {
    let Some(s) = copy_stream(on, &[buf.home_stream()]) else {
        return ops::zero(on, buf);
    };
    let here = s.context().clone();
    match device_context(buf, &here)? {
        Some(c) if !same(&c, &here) => {
            let home = home_on(&c, &[buf.home_stream()]);
            on_context(&s, &c, home, |h| ops::zero(On::Stream(h), buf))
        }
        _ => ops::zero(on, buf),
    }
}

/// Whether device `from` can map the memory of device `to` (`cuDeviceCanAccessPeer`).
pub fn can_access_peer(from: &CudaContext, to: &CudaContext) -> Result<bool> {
    require_driver()?;
    let mut can = 0i32;
    // SAFETY: plain query on two valid device handles.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, from.cu_device(), to.cu_device()) }
        .result()
        .map_err(driver("cuDeviceCanAccessPeer"))?;
    Ok(can != 0)
}

/// Lets kernels and copies of `from` access the memory of `to` directly (`cuCtxEnablePeerAccess`),
/// which makes peer copies between them faster. Enabling it twice is fine. The copy rules do not
/// need it: without it, their reverse is staged through peer copies.
///
/// [`Error::NoPeerAccess`] when the devices cannot map each other's memory.
pub fn enable_peer_access(from: &Arc<CudaContext>, to: &Arc<CudaContext>) -> Result<()> {
    if same(from, to) {
        return Ok(());
    }
    if !can_access_peer(from, to)? {
        return Err(Error::NoPeerAccess {
            from: from.ordinal(),
            to: to.ordinal(),
        });
    }
    from.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    // SAFETY: `to` is a live context.
    match unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) } {
        sys::cudaError_enum::CUDA_SUCCESS
        | sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
        | sys::cudaError_enum::CUDA_ERROR_INVALID_DEVICE => Err(Error::NoPeerAccess {
            from: from.ordinal(),
            to: to.ordinal(),
        }),
        e => Err(driver("cuCtxEnablePeerAccess")(
            cudarc::driver::DriverError(e),
        )),
    }
}

fn same(a: &CudaContext, b: &CudaContext) -> bool {
    a.cu_ctx() == b.cu_ctx()
}

/// The copy's stream: the one `on` names, else the first buffer's own stream; `None` without a
/// driver or a stream (then `ops` decides, and reports what is missing).
fn copy_stream<'s>(on: On<'s>, homes: &[Option<&Arc<CudaStream>>]) -> Option<CopyStream<'s>> {
    if !crate::cuda::driver_available() {
        return None;
    }
    match on {
        On::Stream(s) => Some(CopyStream::Borrowed(s)),
        _ => homes
            .iter()
            .flatten()
            .next()
            .map(|s| CopyStream::Owned((*s).clone())),
    }
}

/// The stream of the copy being differentiated, named by the caller or found on a buffer.
enum CopyStream<'s> {
    Borrowed(&'s CudaStream),
    Owned(Arc<CudaStream>),
}

impl core::ops::Deref for CopyStream<'_> {
    type Target = CudaStream;
    fn deref(&self) -> &CudaStream {
        match self {
            CopyStream::Borrowed(s) => s,
            CopyStream::Owned(s) => s,
        }
    }
}

/// The context a device shadow lives on (`None` for memory that is not device memory). A raw
/// device pointer on the device of `here` counts as living on `here`.
fn device_context<M: ShadowMemory + ?Sized>(
    m: &M,
    here: &Arc<CudaContext>,
) -> Result<Option<Arc<CudaContext>>> {
    if m.kind() != MemoryKind::Device {
        return Ok(None);
    }
    if let Some(c) = m.context() {
        return Ok(Some(c.clone()));
    }
    if m.is_empty() || device_count() <= 1 {
        // With one device every device pointer is on `here`'s device: no driver query.
        return Ok(Some(here.clone()));
    }
    let mut ordinal = -1i32;
    // SAFETY: a query on an address; the driver answers an error for unknown addresses.
    let known = unsafe {
        sys::cuPointerGetAttribute(
            (&raw mut ordinal).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            m.region().start,
        )
    }
    .result()
    .is_ok();
    match usize::try_from(ordinal) {
        Ok(o) if known && o != here.ordinal() => Ok(Some(primary_context(o)?)),
        // Unknown to the driver, or on this device: the operations of `ops` decide, as before.
        _ => Ok(Some(here.clone())),
    }
}

/// How many CUDA devices there are (asked once; 0 when the driver cannot say).
fn device_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT
        .get_or_init(|| CudaContext::device_count().map_or(0, |c| usize::try_from(c).unwrap_or(0)))
}

/// The primary context of device `ordinal`, retained once.
fn primary_context(ordinal: usize) -> Result<Arc<CudaContext>> {
    static CONTEXTS: Mutex<Vec<Arc<CudaContext>>> = Mutex::new(Vec::new());
    let mut all = CONTEXTS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = all.iter().find(|c| c.ordinal() == ordinal) {
        return Ok(c.clone());
    }
    let c = crate::cuda::context(ordinal)?;
    all.push(c.clone());
    Ok(c)
}

/// The own stream of one of the buffers, if it lives on `ctx`.
fn home_on(ctx: &CudaContext, homes: &[Option<&Arc<CudaStream>>]) -> Option<Arc<CudaStream>> {
    homes
        .iter()
        .flatten()
        .find(|s| same(s.context(), ctx))
        .map(|s| (*s).clone())
}

/// A stream of `ctx` for routed work: `home` if given, else one helper stream per context.
fn stream_on(ctx: &Arc<CudaContext>, home: Option<Arc<CudaStream>>) -> Result<Arc<CudaStream>> {
    if let Some(h) = home {
        return Ok(h);
    }
    static HELPERS: Mutex<Vec<Arc<CudaStream>>> = Mutex::new(Vec::new());
    let mut all = HELPERS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = all.iter().find(|s| same(s.context(), ctx)) {
        return Ok(s.clone());
    }
    let s = ctx
        .new_stream()
        .map_err(driver("cuStreamCreate (peer helper)"))?;
    all.push(s.clone());
    Ok(s)
}

/// `to` waits for the work queued so far on `from`.
fn order(from: &CudaStream, to: &CudaStream) -> Result<()> {
    if from.cu_stream() == to.cu_stream() && same(from.context(), to.context()) {
        return Ok(());
    }
    let e = from
        .record_event(None)
        .map_err(driver("cuEventRecord (peer ordering)"))?;
    to.wait(&e)
        .map_err(driver("cuStreamWaitEvent (peer ordering)"))
}

/// Runs `f` on a stream of `ctx`, after the work queued on `s`, and orders `s` after it.
fn on_context<R>(
    s: &CudaStream,
    ctx: &Arc<CudaContext>,
    home: Option<Arc<CudaStream>>,
    f: impl FnOnce(&CudaStream) -> Result<R>,
) -> Result<R> {
    let h = stream_on(ctx, home)?;
    order(s, &h)?;
    let r = f(&h);
    order(&h, s)?;
    r
}

/// `acc (context a) += src (context b); src ← 0`, through staging on `a`. Lengths already agree.
fn staged<A, B>(
    s: &CudaStream,
    acc: &mut A,
    a: &Arc<CudaContext>,
    src: &mut B,
    b: &Arc<CudaContext>,
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let n = acc.len();
    if n == 0 {
        return Ok(());
    }
    let bytes = n * size_of::<A::Elem>();
    // The copy's stream serves the context it belongs to; the other side gets one of its own.
    let (ha_own, hb_own);
    let ha: &CudaStream = if same(a, s.context()) {
        s
    } else {
        ha_own = stream_on(a, home_on(a, &[acc.home_stream()]))?;
        &ha_own
    };
    let hb: &CudaStream = if same(b, s.context()) {
        s
    } else {
        hb_own = stream_on(b, home_on(b, &[src.home_stream()]))?;
        &hb_own
    };
    let entry = stage_entry(a);
    let mut stage = lock(&entry);
    // The staging buffer's last use (possibly from another copy stream) comes first.
    if let Some(last) = &stage.last {
        s.wait(last)
            .map_err(driver("cuStreamWaitEvent (peer staging)"))?;
    }
    let ptr = stage.reserve(a, bytes)?;
    order(s, hb)?;
    let copied = peer_copy(hb, ptr, a, &*src, b, bytes)
        .and_then(|()| ops::zero(On::Stream(hb), src))
        .and_then(|()| order(hb, ha))
        .and_then(|()| {
            // SAFETY: `ptr` holds `n` elements on context `a`, written on `hb` before `ha` waits.
            let staged = unsafe {
                RawShadow::new(
                    MemoryKind::Device,
                    ptr as *mut A::Elem,
                    0,
                    n,
                    "peer staging",
                )
            }?;
            ops::accumulate(On::Stream(ha), acc, &staged)
        });
    // Ordered back into the copy's stream even after a failure, and the staging buffer's use
    // recorded there, so that it is only reused (or freed) once everything queued on it is done.
    let joined = order(hb, s).and_then(|()| order(ha, s)).and_then(|()| {
        stage.last = Some(
            s.record_event(None)
                .map_err(driver("cuEventRecord (peer staging)"))?,
        );
        Ok(())
    });
    drop(stage);
    copied.and(joined)
}

/// `cuMemcpyPeerAsync(dst (context a) ← src (context b))` on `hb`, a stream of `b`.
fn peer_copy<B: ShadowMemory + ?Sized>(
    hb: &CudaStream,
    dst: u64,
    a: &CudaContext,
    src: &B,
    b: &CudaContext,
    bytes: usize,
) -> Result<()> {
    let Some(from) = src.device(hb) else {
        return Err(Error::UnsupportedKinds {
            op: "peer accumulate",
            dst: MemoryKind::Device,
            src: src.kind(),
            why: "the source has no device address",
        });
    };
    b.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    // SAFETY: `dst` holds `bytes` on `a`; `from` holds `bytes` on `b`, ordered on `hb` by its guard.
    unsafe {
        sys::cuMemcpyPeerAsync(
            dst,
            a.cu_ctx(),
            from.addr,
            b.cu_ctx(),
            bytes,
            hb.cu_stream(),
        )
    }
    .result()
    .map_err(driver("cuMemcpyPeerAsync (peer accumulate)"))
}

/// Device staging for peer accumulation: one buffer per destination context, reused by every
/// copy stream; each use waits for the previous one (an event), so reuse never races.
struct Stage {
    ptr: u64,
    bytes: usize,
    /// Keeps the context the buffer lives on alive (and its handle, the key, unique).
    ctx: Option<Arc<CudaContext>>,
    /// Recorded after the last use.
    last: Option<CudaEvent>,
}

// SAFETY: the raw device buffer is only touched while the entry's mutex is held.
unsafe impl Send for Stage {}

fn stage_entry(a: &CudaContext) -> Arc<Mutex<Stage>> {
    type Entries = HashMap<usize, Arc<Mutex<Stage>>>;
    static ENTRIES: OnceLock<Mutex<Entries>> = OnceLock::new();
    let mut map = lock(ENTRIES.get_or_init(Default::default));
    map.entry(a.cu_ctx() as usize)
        .or_insert_with(|| {
            Arc::new(Mutex::new(Stage {
                ptr: 0,
                bytes: 0,
                ctx: None,
                last: None,
            }))
        })
        .clone()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Stage {
    /// At least `bytes` of device memory on `a`. Growing first waits for the last use.
    fn reserve(&mut self, a: &Arc<CudaContext>, bytes: usize) -> Result<u64> {
        if bytes <= self.bytes {
            return Ok(self.ptr);
        }
        let new = bytes.max(self.bytes.saturating_mul(2));
        if let Some(last) = &self.last {
            last.synchronize()
                .map_err(driver("cuEventSynchronize (peer staging growth)"))?;
        }
        a.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: plain allocation and release on context `a`, bound above; no work is pending on
        // the old buffer (its last use is complete).
        unsafe {
            if self.ptr != 0 {
                sys::cuMemFree_v2(self.ptr)
                    .result()
                    .map_err(driver("cuMemFree (peer staging)"))?;
                self.ptr = 0;
                self.bytes = 0;
            }
            let mut p = 0u64;
            sys::cuMemAlloc_v2(&mut p, new)
                .result()
                .map_err(driver("cuMemAlloc (peer staging)"))?;
            self.ptr = p;
        }
        self.bytes = new;
        self.ctx = Some(a.clone());
        Ok(self.ptr)
    }
}
