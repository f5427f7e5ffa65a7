//! Buffers taken out of the pool: a [`Lease`] for one operation (its end recorded on the stream
//! it borrows), a [`Held`] buffer for longer (a tape's saved region: each use bracketed by a
//! wait and a record). Both return the buffer with an event marking its last use, so the next
//! holder's stream waits for that, never the host.

use super::{Buffer, CurrentContext, Memory, entries, entry, last_use_done};
use crate::driver::driver;
use crate::error::Result;
use cudarc::driver::{CudaContext, CudaStream, result, sys};
use std::sync::Arc;

/// A pooled buffer, held exclusively until dropped. Dropping it records the end of its use on
/// the stream given to [`Lease::new`] and returns it to the pool.
pub(crate) struct Lease<'s> {
    ctx: Arc<CudaContext>,
    buf: Option<Buffer>,
    /// The stream of the buffer's last use: a stream of the buffer's own context.
    last_use: &'s CudaStream,
}

impl<'s> Lease<'s> {
    /// At least `bytes` of `memory` on `last_use`'s context. `first_use` (any context) is made to
    /// wait for the buffer's previous use before anything it does next; `last_use` is where the
    /// end of this use is recorded when the lease drops.
    pub(crate) fn new(
        memory: Memory,
        bytes: usize,
        first_use: &CudaStream,
        last_use: &'s CudaStream,
    ) -> Result<Self> {
        let ctx = last_use.context().clone();
        let buf = take(&ctx, memory, bytes)?;
        let lease = Lease {
            ctx,
            buf: Some(buf),
            last_use,
        };
        wait_for_last_use(lease.buffer(), first_use)?;
        Ok(lease)
    }

    /// Pooled page-locked memory holding a copy of `data`, written by the host before this
    /// returns: device work enqueued on the copy reads pooled memory, never `data`, so a borrowed
    /// slice (which may itself be page-locked memory, whose async copies would read it later) is
    /// finished with when the operation returns. The buffer is one whose last use has completed
    /// (or a new one), so the host neither waits nor writes under pending device work. The end of
    /// the lease is recorded on `last_use`, as for [`Lease::new`].
    pub(crate) fn pinned_copy_of<T: Copy>(data: &[T], last_use: &'s CudaStream) -> Result<Self> {
        let bytes = size_of_val(data);
        let ctx = last_use.context().clone();
        let buf = take_idle(&ctx, Memory::PinnedHost, bytes)?;
        // SAFETY: the buffer is page-locked host memory of at least `bytes`, page-aligned (so
        // aligned for `T`), leased exclusively, and no device work on it is pending (its last use
        // has completed): the host may write it. `data` is a live slice of `bytes` bytes; a pooled
        // buffer never overlaps memory the caller can borrow.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr().cast::<u8>(), buf.ptr as *mut u8, bytes)
        };
        Ok(Lease {
            ctx,
            buf: Some(buf),
            last_use,
        })
    }

    /// The buffer's address, checked to hold at least `n` elements of `T`: page-aligned (pinned)
    /// or 256-byte aligned (device), device-reachable, exclusively the lease's while it lives
    /// (what `memory::view` builds a lease's views on).
    pub(crate) fn room<T>(&self, n: usize) -> Result<u64> {
        let b = self.buffer();
        fits::<T>(b, n)?;
        Ok(b.ptr)
    }

    /// The context the buffer belongs to.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The host address of a page-locked buffer holding at least `n` elements of `T`, for a
    /// device → host copy into it; an error for pooled device memory, which has no host address.
    pub(crate) fn host_ptr_mut<T>(&mut self, n: usize) -> Result<*mut u8> {
        let b = self.buffer();
        fits::<T>(b, n)?;
        if b.memory != Memory::PinnedHost {
            return Err(crate::error::Error::UnsupportedKinds {
                op: "staging",
                dst: crate::address::MemoryKind::Device,
                src: crate::address::MemoryKind::Device,
                why: "a pooled device buffer has no host address",
            });
        }
        Ok(b.ptr as *mut u8)
    }

    fn buffer(&self) -> &Buffer {
        self.buf.as_ref().expect("present until drop")
    }

    /// The buffer's address (device address; for pinned memory also its host address).
    pub(crate) fn ptr(&self) -> u64 {
        self.buffer().ptr
    }
}

fn gone() -> crate::error::Error {
    crate::error::Error::LengthMismatch {
        what: "a held buffer already returned".into(),
        expected: 1,
        found: 0,
    }
}

/// `Ok` when `b` holds `n` elements of `T`.
fn fits<T>(b: &Buffer, n: usize) -> Result<()> {
    match n.checked_mul(size_of::<T>()) {
        Some(bytes) if bytes <= b.bytes => Ok(()),
        _ => Err(crate::error::Error::LengthMismatch {
            what: "a pooled staging buffer".into(),
            expected: n,
            found: b.bytes / size_of::<T>().max(1),
        }),
    }
}

const WAIT_DEFAULT: sys::CUevent_wait_flags = sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT;

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(mut buf) = self.buf.take() else {
            return;
        };
        let _current = CurrentContext::save();
        let recorded = record_use(&self.ctx, &mut buf, self.last_use).is_ok();
        if !recorded {
            // Without an event the end of the use is unknown: wait for it before reuse.
            let _ = self.last_use.synchronize();
            if let Some(e) = buf.last.take() {
                // SAFETY: the event is no longer referenced by any pending wait we issue.
                let _ = unsafe { result::event::destroy(e) };
            }
        }
        entry(&mut entries(), &self.ctx).free.push(buf);
    }
}

/// Takes a buffer of at least `bytes` of `memory` out of `ctx`'s pool (or allocates one).
///
/// Nothing is freed to make room: freeing device or page-locked memory (`cuMemFree`,
/// `cuMemFreeHost`) waits for the device's work in flight, and a call that should only enqueue
/// must not. New buffers are sized to the next power of two, so a pool holds few sizes; all are
/// freed when the context's entry is released.
fn take(ctx: &Arc<CudaContext>, memory: Memory, bytes: usize) -> Result<Buffer> {
    let _current = CurrentContext::save();
    let mut all = entries();
    let e = entry(&mut all, ctx);
    let fit = e
        .free
        .iter()
        .position(|b| b.memory == memory && b.bytes >= bytes);
    match fit {
        Some(i) => Ok(e.free.swap_remove(i)),
        None => {
            ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
            alloc(memory, sized(bytes))
        }
    }
}

/// The size a new pooled buffer of at least `bytes` gets.
pub(super) fn sized(bytes: usize) -> usize {
    bytes.max(1).checked_next_power_of_two().unwrap_or(bytes)
}

/// How many pooled buffers that fit but are still in use [`take_idle`] lets exist before it waits
/// for one of them instead of allocating another: the pool stays bounded when calls are enqueued
/// faster than the device runs them.
const MAX_BUSY: usize = 4;

/// A buffer of at least `bytes` of `memory` out of `ctx`'s pool whose last use has completed (or a
/// new one): for host writes, which must not race with device work. The host waits only when
/// [`MAX_BUSY`] fitting buffers are all still in use, for one of them, outside the pool's lock.
fn take_idle(ctx: &Arc<CudaContext>, memory: Memory, bytes: usize) -> Result<Buffer> {
    let busy = {
        let _current = CurrentContext::save();
        let mut all = entries();
        let e = entry(&mut all, ctx);
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        let fits = |b: &Buffer| b.memory == memory && b.bytes >= bytes;
        if let Some(i) = e.free.iter().position(|b| fits(b) && last_use_done(b)) {
            return Ok(e.free.swap_remove(i));
        }
        match e.free.iter().position(fits) {
            Some(i) if e.free.iter().filter(|b| fits(b)).count() >= MAX_BUSY => {
                e.free.swap_remove(i)
            }
            // Nothing freed to make room (see `take`).
            _ => return alloc(memory, sized(bytes)),
        }
    };
    let _current = CurrentContext::save();
    let waited = ctx.bind_to_thread().and_then(|()| match busy.last {
        // SAFETY: a live event of the buffer's context, now current.
        Some(ev) => unsafe { result::event::synchronize(ev) },
        None => Ok(()),
    });
    match waited {
        Ok(()) => Ok(busy),
        Err(err) => {
            // Its last use is still unknown: back into the pool, where the next user waits.
            entry(&mut entries(), ctx).free.push(busy);
            Err(driver("cuEventSynchronize (pooled staging)")(err))
        }
    }
}

/// Makes `stream` (any context) wait for the last recorded use of `buf`.
fn wait_for_last_use(buf: &Buffer, stream: &CudaStream) -> Result<()> {
    if let Some(last) = buf.last {
        let _current = CurrentContext::save();
        // A per-thread stream's handle means "of the current context": bind its own.
        stream
            .context()
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: `last` is a live event of the buffer's context; a stream may wait on an event
        // of another context.
        unsafe { result::stream::wait_event(stream.cu_stream(), last, WAIT_DEFAULT) }
            .map_err(driver("cuStreamWaitEvent (pooled buffer reuse)"))?;
    }
    Ok(())
}

/// Records the end of a use of `buf` on `stream` (a stream of the buffer's context `ctx`).
fn record_use(
    ctx: &CudaContext,
    buf: &mut Buffer,
    stream: &CudaStream,
) -> core::result::Result<(), cudarc::driver::DriverError> {
    let _current = CurrentContext::save();
    ctx.bind_to_thread()?;
    let event = match buf.last {
        Some(e) => e,
        None => {
            let e = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
            buf.last = Some(e);
            e
        }
    };
    // SAFETY: `event` and `stream` belong to the buffer's context.
    unsafe { result::event::record(event, stream.cu_stream()) }
}

/// A pooled buffer held for longer than one operation (a tape's saved region): not tied to a
/// stream borrow. Every use is bracketed by [`Held::wait`] (order the stream after the previous
/// use) and [`Held::record`] (mark the end of this use); dropping it returns the buffer to the
/// pool with its last recorded use, so the next holder waits for that, never the host.
pub(crate) struct Held {
    ctx: Arc<CudaContext>,
    buf: Option<Buffer>,
    /// A use was enqueued whose end could not be recorded: the buffer is never reused.
    unknown_end: bool,
}

impl Held {
    /// At least `bytes` of `memory` on `stream`'s context, which is made to wait for the buffer's
    /// previous use.
    pub(crate) fn new(memory: Memory, bytes: usize, stream: &CudaStream) -> Result<Self> {
        let ctx = stream.context().clone();
        let buf = take(&ctx, memory, bytes)?;
        wait_for_last_use(&buf, stream)?;
        Ok(Held {
            ctx,
            buf: Some(buf),
            unknown_end: false,
        })
    }

    /// The context the buffer belongs to.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The buffer's address, checked to hold at least `n` elements of `T`: 256-byte aligned
    /// device memory, exclusively the holder's (what `memory::view` builds its views on); to use
    /// on a stream ordered after its last use ([`Self::wait`]).
    pub(crate) fn room<T>(&self, n: usize) -> Result<u64> {
        let b = self.buf.as_ref().ok_or_else(gone)?;
        fits::<T>(b, n)?;
        Ok(b.ptr)
    }

    /// Orders `stream` after the buffer's last recorded use.
    pub(crate) fn wait(&self, stream: &CudaStream) -> Result<()> {
        match &self.buf {
            Some(b) => wait_for_last_use(b, stream),
            None => Ok(()),
        }
    }

    /// Records the end of the work just enqueued on `stream` (of the buffer's context).
    pub(crate) fn record(&mut self, stream: &CudaStream) -> Result<()> {
        let Some(buf) = self.buf.as_mut() else {
            return Ok(());
        };
        let r = record_use(&self.ctx, buf, stream);
        if r.is_err() {
            self.unknown_end = true;
        }
        r.map_err(driver("cuEventRecord (held buffer)"))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(buf) = self.buf.take() else { return };
        if self.unknown_end {
            // Work that may still touch it was enqueued and its end is unknown: never reused or
            // freed here (a `Buffer` frees nothing when dropped); the driver frees it with its
            // context.
            return;
        }
        let _current = CurrentContext::save();
        entry(&mut entries(), &self.ctx).free.push(buf);
    }
}

pub(super) fn alloc(memory: Memory, bytes: usize) -> Result<Buffer> {
    // SAFETY: plain allocations in the current context (bound by the caller).
    let ptr = unsafe {
        match memory {
            Memory::Device => result::malloc_sync(bytes).map_err(driver("cuMemAlloc (staging)"))?,
            Memory::PinnedHost => {
                result::malloc_host(bytes, 0).map_err(driver("cuMemAllocHost (staging)"))? as u64
            }
        }
    };
    Ok(Buffer {
        memory,
        ptr,
        bytes,
        last: None,
    })
}

/// Frees `b`. The buffer's context must be current.
///
/// # Safety
/// `b` was allocated by [`alloc`] in the current context, is not leased, and its last use has
/// completed ([`last_use_done`]).
pub(super) unsafe fn free(b: Buffer) {
    if let Some(e) = b.last {
        // SAFETY: a live event of this context, which nothing waits on any more.
        let _ = unsafe { result::event::destroy(e) };
    }
    // SAFETY: by the caller's contract, and the last use has completed.
    unsafe {
        let _ = match b.memory {
            Memory::Device => result::free_sync(b.ptr),
            Memory::PinnedHost => result::free_host(b.ptr as *mut core::ffi::c_void),
        };
    }
}
