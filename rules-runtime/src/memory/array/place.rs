//! A CUDA array as the runtime reaches it: borrowed ([`ArrayRef`]: the handle, extent, element
//! size, context, and the event that orders work on it across streams), and its boxes, checked to
//! lie inside it ([`Place`]).

use crate::driver::driver;
use crate::driver::pool::CurrentContext;
use crate::error::{Error, Result};
use crate::region::Pitched;
use cudarc::driver::{CudaContext, CudaStream, result, sys};
use std::sync::{Arc, Mutex};

/// What the runtime needs of array memory: the array, its extent and element size, its context,
/// and where to record the end of work enqueued on it.
#[derive(Clone, Copy)]
pub struct ArrayRef<'a> {
    pub(crate) handle: sys::CUarray,
    pub(crate) extent: (usize, usize, usize),
    pub(crate) size: usize,
    /// The array's surface object, if it is surface-capable.
    pub(crate) surface: Option<sys::CUsurfObject>,
    pub(crate) ctx: &'a Arc<CudaContext>,
    pub(crate) last: Option<&'a Mutex<Option<sys::CUevent>>>,
}

impl core::fmt::Debug for ArrayRef<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ArrayRef")
            .field("extent", &self.extent)
            .finish()
    }
}

/// A box of a CUDA array, checked to lie inside it ([`ArrayRef::place`]): the only way the
/// device layer is given an array box, so that what a copy or kernel touches is what was checked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place<'a> {
    pub(crate) handle: sys::CUarray,
    pub(crate) surface: Option<sys::CUsurfObject>,
    pub(crate) dims: u32,
    /// The box's first element.
    pub(crate) origin: (usize, usize, usize),
    /// The box's width, height and depth.
    pub(crate) shape: (usize, usize, usize),
    /// Bytes per element.
    pub(crate) size: usize,
    _array: core::marker::PhantomData<&'a ()>,
}

impl Place<'_> {
    /// Bytes per element of the array.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The box's width, height and depth.
    pub(crate) fn shape(&self) -> (usize, usize, usize) {
        self.shape
    }

    /// Whether both are boxes of one array.
    pub(crate) fn same_array(&self, other: &Place<'_>) -> bool {
        self.handle == other.handle
    }
}

impl<'a> ArrayRef<'a> {
    /// Where box `r` of the array starts. The box must use the array's own layout (pitch
    /// `width · size`, slice height `height`) and not cross the end of a row, a slice or the
    /// array; an empty box is refused too (it has nowhere to be).
    pub(crate) fn place(&self, r: &Pitched, what: &str) -> Result<Place<'a>> {
        let (w, h, d) = self.extent;
        let bad = |why: String| Error::BadRegion {
            what: what.to_string(),
            why,
        };
        if r.elements() == 0 {
            return Err(bad("an empty box of a CUDA array".into()));
        }
        if (r.height > 1 || r.depth > 1) && r.pitch != w * self.size {
            return Err(bad(format!(
                "a box of a CUDA array has the array's pitch ({} bytes), not {}",
                w * self.size,
                r.pitch
            )));
        }
        if r.depth > 1 && r.slice_height != h {
            return Err(bad(format!(
                "a box of a CUDA array has the array's slice height ({h} rows), not {}",
                r.slice_height
            )));
        }
        let (x, y, z) = (r.offset % w, (r.offset / w) % h, r.offset / (w * h));
        let fits = |o: usize, n: usize, m: usize| o.checked_add(n).is_some_and(|e| e <= m);
        if !(fits(x, r.width, w) && fits(y, r.height, h) && fits(z, r.depth, d)) {
            return Err(bad(format!(
                "the box at ({x}, {y}, {z}) of {} × {} × {} elements does not fit in the \
                 array's {w} × {h} × {d}",
                r.width, r.height, r.depth
            )));
        }
        Ok(Place {
            handle: self.handle,
            surface: self.surface,
            dims: self.dims(),
            origin: (x, y, z),
            shape: r.shape(),
            size: self.size,
            _array: core::marker::PhantomData,
        })
    }
}

impl ArrayRef<'_> {
    /// 1, 2 or 3, as the driver sees the array (see [`CudaArray::new`](super::CudaArray::new)).
    pub(crate) fn dims(&self) -> u32 {
        match self.extent {
            (_, 1, 1) => 1,
            (_, _, 1) => 2,
            _ => 3,
        }
    }

    /// Orders `stream` after the last work the runtime enqueued on the array (on any stream):
    /// every operation on an array calls this before its first work and [`Self::record`] after
    /// its last, so that work on the array is ordered across streams as cudarc orders its
    /// buffers' work.
    pub(crate) fn wait(&self, stream: &CudaStream) -> Result<()> {
        let Some(last) = self.last else {
            return Ok(());
        };
        let last = last.lock().unwrap_or_else(|p| p.into_inner());
        let Some(e) = *last else { return Ok(()) };
        let _current = CurrentContext::save();
        stream
            .context()
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        // SAFETY: `e` is a live event of the array's context (destroyed only by the array's
        // drop, which `self` borrows against); a stream may wait on an event of any context.
        unsafe {
            result::stream::wait_event(
                stream.cu_stream(),
                e,
                sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .map_err(driver("cuStreamWaitEvent (CUDA array)"))
    }

    /// Records the end of the work just enqueued on `stream` (of the array's context), for the
    /// array's drop and for the next operation on the array ([`Self::wait`]).
    pub(crate) fn record(&self, stream: &CudaStream) -> Result<()> {
        let Some(last) = self.last else {
            return Ok(());
        };
        let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
        let _current = CurrentContext::save();
        self.ctx
            .bind_to_thread()
            .map_err(driver("cuCtxSetCurrent"))?;
        let e = match *last {
            Some(e) => {
                // Work recorded meanwhile by another thread on another stream (two readers of a
                // shared array) must stay covered: this stream waits for it before the event
                // moves here, so the event marks the end of both. The wait comes after this
                // stream's own work, which it does not delay.
                // SAFETY: a live event of the array's context; the stream is of that context.
                unsafe {
                    result::stream::wait_event(
                        stream.cu_stream(),
                        e,
                        sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                    )
                }
                .map_err(driver("cuStreamWaitEvent (CUDA array)"))?;
                e
            }
            None => {
                let e = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                    .map_err(driver("cuEventCreate (array)"))?;
                *last = Some(e);
                e
            }
        };
        // SAFETY: the event and the stream belong to the array's context.
        unsafe { result::event::record(e, stream.cu_stream()) }.map_err(driver("cuEventRecord"))
    }
}
