//! The runtime's one cache, owned: per CUDA context, the loaded shadow kernels and a pool of
//! buffers (device memory and page-locked host memory): staging for the host and cross-context
//! routes, and the collective rules' scratch.
//!
//! Ownership, and why reuse never races:
//! - An entry is keyed by its context's handle ([`CtxKey`]) and holds an `Arc` of that context, so
//!   the handle cannot be destroyed and reused by another context while the entry exists.
//! - A buffer is used only under a [`Lease`], which takes it out of the pool: two threads (or two
//!   streams, or two calls on cudarc's `per_thread_stream()`, whose handle is the same on every
//!   thread) never hold the same buffer. While leased, nothing else can free or grow it.
//! - A lease ends by recording an event on the stream of the buffer's last use; the next lease of
//!   that buffer makes its first stream wait for that event, and a buffer is freed (to grow, or on
//!   release) only once that event has completed, asked without waiting. So enqueued work that
//!   may still touch a buffer always completes before the buffer is reused or freed, and the
//!   cache never blocks the host (a stream gated on something the caller does later cannot
//!   deadlock it).
//! - Entries are released when nothing outside the cache holds their context object any more
//!   (the user's last stream, buffer and context `Arc` are gone): on the next use of the cache,
//!   buffers whose last use has completed are freed and the `Arc` dropped (which destroys the
//!   context, with the cache's streams and the kernels' module, if it was the last), after the
//!   thread's current context has been restored. The streams and the module are never destroyed
//!   by the cache itself: another `Arc` of the same context may still use them. Nothing there
//!   waits on the host: a stream held by a gate the caller will open later cannot deadlock it.
//!   A program that makes a stream per request reuses the same few buffers: streams are not
//!   keys.

use crate::driver::driver;
use crate::error::Result;
use cudarc::driver::{CudaContext, CudaStream, result, sys};
use std::sync::{Arc, Mutex, MutexGuard};

mod lease;
pub(crate) mod modules;

use lease::free;
pub(crate) use lease::{Held, Lease};
use modules::CheckKernels;
pub(crate) use modules::{Kernels, check_kernels, kernels};

/// The identity of a CUDA context, valid while an [`Arc`] of the context is held beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CtxKey(usize);

impl CtxKey {
    pub(crate) fn of(ctx: &CudaContext) -> Self {
        CtxKey(ctx.cu_ctx() as usize)
    }
}

/// Which memory a pooled buffer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Memory {
    /// `cuMemAlloc`.
    Device,
    /// `cuMemAllocHost`: page-locked, mapped, reachable by the host and (through unified
    /// addressing) by kernels.
    PinnedHost,
}

struct Buffer {
    memory: Memory,
    /// Device address (for pinned memory: the host address, which is also its device address).
    ptr: u64,
    bytes: usize,
    /// Recorded after the buffer's last use, on a stream of the buffer's context.
    last: Option<sys::CUevent>,
}

// SAFETY: the buffer is plain driver memory, touched only by its lease holder or under the lock.
unsafe impl Send for Buffer {}

struct Entry {
    ctx: Arc<CudaContext>,
    kernels: Option<Kernels>,
    checks: Option<CheckKernels>,
    free: Vec<Buffer>,
    /// Device memory that is all zero bits and never written after (the source of the copies
    /// that zero CUDA array memory): the largest asked for so far. Smaller ones it replaced are
    /// kept, since copies may still read them: all go with the context.
    zeros: Vec<(u64, usize)>,
    /// Streams the cache created: [`IDLE`] and [`HELPER`].
    streams: [Option<RawStream>; 2],
}

/// A stream on which no work is ever enqueued (see [`with_idle_stream`]).
const IDLE: usize = 0;
/// A stream for work on this context when no buffer names one (see [`helper_stream`]).
const HELPER: usize = 1;

struct RawStream(sys::CUstream);
// SAFETY: a plain driver handle, valid while the entry holds the context.
unsafe impl Send for RawStream {}

static ENTRIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn entries() -> MutexGuard<'static, Vec<Entry>> {
    ENTRIES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The entry of `ctx` (created if needed), after releasing the entries nobody else holds.
fn entry<'g>(all: &'g mut Vec<Entry>, ctx: &Arc<CudaContext>) -> &'g mut Entry {
    let key = CtxKey::of(ctx);
    let mut released = Vec::new();
    all.retain_mut(|e| {
        let keep = CtxKey::of(&e.ctx) == key || !release_if_unused(e);
        if !keep {
            released.push(e.ctx.clone());
        }
        keep
    });
    defer_drop(released);
    match all.iter().position(|e| CtxKey::of(&e.ctx) == key) {
        Some(i) => {
            let e = &mut all[i];
            // Another `Arc` of the same live context (cudarc hands out one per
            // `CudaContext::new`): hold the caller's from now on, so that the entry follows the
            // context the user still holds, not the object they may drop.
            if !Arc::ptr_eq(&e.ctx, ctx) {
                e.ctx = ctx.clone();
            }
            e
        }
        None => {
            all.push(Entry {
                ctx: ctx.clone(),
                kernels: None,
                checks: None,
                free: Vec::new(),
                zeros: Vec::new(),
                streams: [None, None],
            });
            all.last_mut().expect("just pushed")
        }
    }
}

/// At least `bytes` of device memory of `stream`'s context that are zero and stay zero: read by
/// copies on any stream, never written. Grows by allocating a larger buffer, zeroed on the cache's
/// helper stream and waited for there (only then, and nothing else waits); the smaller ones stay
/// allocated until the context is destroyed, which frees them with it (copies enqueued earlier
/// may still read them, and no event could say when every reader on every stream is done).
pub(crate) fn zeros(stream: &CudaStream, bytes: usize) -> Result<u64> {
    let ctx = stream.context().clone();
    let helper = helper_stream(&ctx)?;
    let _current = CurrentContext::save();
    let mut all = entries();
    let e = entry(&mut all, &ctx);
    if let Some(&(ptr, have)) = e.zeros.last()
        && have >= bytes
    {
        return Ok(ptr);
    }
    let grown = bytes
        .max(e.zeros.last().map_or(0, |z| z.1.saturating_mul(2)))
        .max(1 << 20);
    ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    // SAFETY: a plain allocation in the current context, zeroed on the helper stream, which is
    // synchronised before the buffer is handed out.
    let ptr = unsafe { result::malloc_sync(grown) }.map_err(driver("cuMemAlloc (zeros)"))?;
    let zeroed = unsafe { result::memset_d8_async(ptr, 0, grown, helper.cu_stream()) }
        .and_then(|()| helper.synchronize());
    if let Err(err) = zeroed {
        // SAFETY: nothing else has seen the buffer; the helper stream's work on it is finished
        // or failed.
        let _ = unsafe { result::free_sync(ptr) };
        return Err(driver("cuMemsetD8Async (zeros)")(err));
    }
    e.zeros.push((ptr, grown));
    Ok(ptr)
}

/// Releases what `e` holds if only the cache references its context object; returns whether it
/// did.
///
/// Nothing here waits: a buffer whose last use has not completed keeps the entry for a later
/// try. The cache's streams and the kernels' module are left to the context, which destroys them
/// when it is destroyed: the context may live on through another `Arc` (cudarc hands out one per
/// `CudaContext::new` for the same primary context), whose holder may still have work queued on
/// the helper stream or a kernel launch behind other work, so destroying or unloading them here
/// could pull them from under that work. A context that lives on keeps them until it is
/// destroyed (two streams, one module and the zero buffers per release).
fn release_if_unused(e: &mut Entry) -> bool {
    if Arc::strong_count(&e.ctx) > 1 {
        return false;
    }
    let _current = CurrentContext::save();
    if e.ctx.bind_to_thread().is_err() {
        return false;
    }
    if !e.free.iter().all(last_use_done) {
        return false;
    }
    for b in e.free.drain(..) {
        // SAFETY: its last use has completed.
        unsafe { free(b) };
    }
    true
}

thread_local! {
    /// How many [`CurrentContext`] guards are alive on this thread, and the context `Arc`s of
    /// released entries, dropped when the outermost guard ends.
    static GUARDS: core::cell::RefCell<(usize, Vec<Arc<CudaContext>>)> =
        const { core::cell::RefCell::new((0, Vec::new())) };
}

/// Drops the `Arc`s of released entries once this thread's outermost [`CurrentContext`] guard has
/// restored the caller's context, or now if there is none: dropping the last `Arc` of a context
/// destroys it (cudarc binds it to the thread first), and a guard saved earlier must not then
/// restore a destroyed context.
fn defer_drop(released: Vec<Arc<CudaContext>>) {
    if released.is_empty() {
        return;
    }
    // During the thread's teardown (a tape dropped with the thread's other locals) `GUARDS` may
    // be gone: no guard is alive then, so the entries go now.
    let mut released = Some(released);
    let _ = GUARDS.try_with(|g| {
        let mut g = g.borrow_mut();
        if g.0 > 0 {
            g.1.extend(released.take().into_iter().flatten());
        }
    });
    let now = released;
    if let Some(released) = now {
        let _current = CurrentContext::save();
        drop(released);
    }
}

/// Whether `b`'s last use has completed (its event has), asked without waiting. The buffer's
/// context must be current.
fn last_use_done(b: &Buffer) -> bool {
    // SAFETY: a live event of the current context.
    b.last
        .is_none_or(|ev| unsafe { result::event::query(ev) }.is_ok())
}

/// Restores the calling thread's current context when dropped: the cache binds contexts to do
/// its work, and must not leave a different one current for the caller.
pub(crate) struct CurrentContext {
    saved: Option<sys::CUcontext>,
    /// Whether this guard is counted in `GUARDS` (not during the thread's teardown, when it may be
    /// gone already).
    counted: bool,
}

impl CurrentContext {
    pub(crate) fn save() -> Self {
        let counted = GUARDS.try_with(|g| g.borrow_mut().0 += 1).is_ok();
        CurrentContext {
            saved: result::ctx::get_current().ok().flatten(),
            counted,
        }
    }

    fn restore(&self) {
        if let Some(c) = self.saved {
            // SAFETY: `c` was current on this thread when the guard was made; restoring it is what
            // the caller had. No context the cache released meanwhile has been destroyed yet
            // (`defer_drop`), so `c` is not one the cache destroyed.
            let _ = unsafe { result::ctx::set_current(c) };
        }
    }
}

impl Drop for CurrentContext {
    fn drop(&mut self) {
        self.restore();
        if !self.counted {
            return;
        }
        let released = GUARDS
            .try_with(|g| {
                let mut g = g.borrow_mut();
                g.0 -= 1;
                if g.0 == 0 {
                    core::mem::take(&mut g.1)
                } else {
                    Vec::new()
                }
            })
            .unwrap_or_default();
        if !released.is_empty() {
            // Dropping them can destroy their contexts, which cudarc binds first: restore again.
            drop(released);
            self.restore();
        }
    }
}

/// Runs `f` with this thread's stream-capture interaction mode relaxed, then restores it: an
/// allocation in `f` (`cuMemAllocHost`) is then neither refused nor does it invalidate a capture
/// in global mode on another stream. It enqueues nothing on any stream, so
/// no capture can record it; the caller refuses its own stream's capture first.
pub(crate) fn with_relaxed_capture<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    // SAFETY: exchanges this thread's mode with a valid one; the old one comes back in `mode`.
    unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
        .result()
        .map_err(driver("cuThreadExchangeStreamCaptureMode"))?;
    let r = f();
    // SAFETY: as above, restoring the mode this thread had.
    let restored = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
        .result()
        .map_err(driver("cuThreadExchangeStreamCaptureMode (restore)"));
    r.and_then(|r| restored.map(|()| r))
}

/// Makes `ctx`'s pool hold at least `count` idle buffers of `memory` of at least `bytes` each,
/// allocating the missing ones (sized as a lease would size them). Returns the bytes of such
/// buffers the pool holds. Buffers leased at the moment are not counted.
pub(crate) fn reserve(
    ctx: &Arc<CudaContext>,
    memory: Memory,
    bytes: usize,
    count: usize,
) -> Result<usize> {
    let _current = CurrentContext::save();
    let mut all = entries();
    let e = entry(&mut all, ctx);
    let fits = |b: &Buffer| b.memory == memory && b.bytes >= bytes;
    let have = e.free.iter().filter(|b| fits(b)).count();
    if have < count {
        e.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        for _ in have..count {
            e.free.push(lease::alloc(memory, lease::sized(bytes))?);
        }
    }
    Ok(e.free.iter().filter(|b| fits(b)).map(|b| b.bytes).sum())
}

/// The raw stream `which` of `ctx`'s entry, created on first use.
fn own_stream(ctx: &Arc<CudaContext>, which: usize) -> Result<sys::CUstream> {
    let _current = CurrentContext::save();
    let mut all = entries();
    let e = entry(&mut all, ctx);
    if let Some(RawStream(s)) = e.streams[which] {
        return Ok(s);
    }
    e.ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    let s = result::stream::create(result::stream::StreamKind::NonBlocking)
        .map_err(driver("cuStreamCreate (runtime stream)"))?;
    e.streams[which] = Some(RawStream(s));
    Ok(s)
}

/// Runs `f` with a cudarc wrapper of a stream of `ctx` on which no work is ever enqueued, and
/// restores the thread's current context afterwards. cudarc hands out some addresses (pinned
/// memory) only against a stream that it makes wait for the buffer's pending work: on this stream
/// that wait orders nothing of anyone's, so asking for an address has no effect.
pub(crate) fn with_idle_stream<R>(
    ctx: &Arc<CudaContext>,
    f: impl FnOnce(&CudaStream) -> R,
) -> Result<R> {
    let _current = CurrentContext::save();
    let handle = own_stream(ctx, IDLE)?;
    // SAFETY: the stream belongs to `ctx` and lives as long as the cache's entry, which the
    // caller's `ctx` keeps alive for the duration of `f`; the wrapper does not destroy it.
    let stream = unsafe { ctx.wrap_borrowed_stream(handle) };
    Ok(f(&stream))
}

/// A stream of `ctx` for shadow work routed there when no buffer of that context names a stream
/// (raw device pointers). The wrapper holds `ctx`, so the stream outlives it.
pub(crate) fn helper_stream(ctx: &Arc<CudaContext>) -> Result<Arc<CudaStream>> {
    let handle = own_stream(ctx, HELPER)?;
    // SAFETY: the stream belongs to `ctx`; the cache destroys it only when nothing but the cache
    // holds `ctx`, and the returned wrapper holds it. Work on it is ordered by events against the
    // copy's stream, by the caller.
    Ok(unsafe { ctx.wrap_borrowed_stream(handle) })
}

/// How many staging buffers the cache holds for `ctx`, and their bytes (for tests of release).
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub(crate) fn pooled(ctx: &CudaContext) -> (usize, usize) {
    let all = entries();
    all.iter()
        .find(|e| CtxKey::of(&e.ctx) == CtxKey::of(ctx))
        .map_or((0, 0), |e| {
            (e.free.len(), e.free.iter().map(|b| b.bytes).sum())
        })
}

/// Entries the cache holds (for tests of release).
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub(crate) fn contexts_held() -> usize {
    entries().len()
}
