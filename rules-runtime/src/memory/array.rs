//! CUDA array memory (`CUarray`): an opaque layout that only the driver's copies read and write.
//! cudarc exposes arrays in its raw layer only, so [`CudaArray`] is a thin owned wrapper: the array,
//! its extent, its element format and its context; destroyed on drop, after the last work the
//! runtime enqueued on it.
//!
//! Arrays are created surface-capable, each with its surface object, so that kernels reach them:
//! zeroing, which memset cannot do on arrays (the reason the seed dropped array support), is a
//! kernel of surface stores, and a reverse between an array and device memory is one kernel.
//! Other shadow work stages through pooled linear memory (a box copy in, the strided kernels, a
//! box copy out). An array past the device's surface limits is plain: staged, and zeroed by a copy
//! from a zero buffer.

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory, ShadowRead};
use crate::device::region::{At, SurfaceBox, copy_box};
use crate::driver::driver;
use crate::driver::pool::CurrentContext;
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::region::Pitched;
use cudarc::driver::{CudaContext, CudaStream, result, sys};
use half::{bf16, f16};
use num_complex::Complex;
use std::sync::{Arc, Mutex};

/// The array format of an element type: the driver's channel format and channel count. Arrays
/// hold bits; the runtime does its arithmetic in linear memory, so 64-bit reals and complex
/// numbers travel as 32-bit unsigned channels, and bf16 as one 16-bit channel.
///
/// # Safety
/// `FORMAT` × `CHANNELS` must be exactly `size_of::<Self>()` bytes.
pub unsafe trait ArrayElement: Differentiable {
    /// The driver's channel format.
    const FORMAT: sys::CUarray_format;
    /// Channels per element (1, 2 or 4).
    const CHANNELS: u32;
}

macro_rules! array_element {
    ($($t:ty => $f:ident x $c:literal),* $(,)?) => {$(
        // SAFETY: the channels add up to the type's size (checked in the tests below).
        unsafe impl ArrayElement for $t {
            const FORMAT: sys::CUarray_format = sys::CUarray_format::$f;
            const CHANNELS: u32 = $c;
        }
    )*};
}

array_element! {
    f32 => CU_AD_FORMAT_FLOAT x 1,
    f16 => CU_AD_FORMAT_HALF x 1,
    bf16 => CU_AD_FORMAT_UNSIGNED_INT16 x 1,
    f64 => CU_AD_FORMAT_UNSIGNED_INT32 x 2,
    Complex<f32> => CU_AD_FORMAT_FLOAT x 2,
    Complex<f64> => CU_AD_FORMAT_UNSIGNED_INT32 x 4,
}

/// A CUDA array of `width × height × depth` elements of `T` (height and depth 1 for 1D and 2D
/// arrays), owned: destroyed when dropped.
///
/// As a shadow it is [`MemoryKind::Array`] memory of `width · height · depth` elements in
/// row-major order (x fastest): a [`crate::Pitched`] box of it has the pitch `width ·
/// size_of::<T>()` and the slice height `height`, and must not cross a row's end.
pub struct CudaArray<T: ArrayElement> {
    handle: sys::CUarray,
    extent: (usize, usize, usize),
    ctx: Arc<CudaContext>,
    /// The array's surface object, for the zeroing kernel; `None` if the driver would not make
    /// the array surface-capable.
    surface: Option<sys::CUsurfObject>,
    /// Recorded after the last work the runtime enqueued on the array.
    last: Mutex<Option<sys::CUevent>>,
    _elem: core::marker::PhantomData<T>,
}

// SAFETY: the handle is a driver object usable from any thread with its context current; the
// event is behind a mutex.
unsafe impl<T: ArrayElement> Send for CudaArray<T> {}
// SAFETY: as above; shared access only reads the handle and extent.
unsafe impl<T: ArrayElement> Sync for CudaArray<T> {}

impl<T: ArrayElement> core::fmt::Debug for CudaArray<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CudaArray")
            .field("dtype", &T::DTYPE)
            .field("extent", &self.extent)
            .finish()
    }
}

impl<T: ArrayElement> CudaArray<T> {
    /// A new array of `width × height × depth` elements on `ctx` (contents undefined). A zero
    /// extent, or one the device does not support, is an error.
    pub fn new(ctx: &Arc<CudaContext>, width: usize, height: usize, depth: usize) -> Result<Self> {
        Self::create(ctx, (width, height, depth), true)
    }

    /// As [`CudaArray::new`], but never surface-capable: for tests of the zero-buffer route.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn without_surface(
        ctx: &Arc<CudaContext>,
        width: usize,
        height: usize,
        depth: usize,
    ) -> Result<Self> {
        Self::create(ctx, (width, height, depth), false)
    }

    fn create(
        ctx: &Arc<CudaContext>,
        (width, height, depth): (usize, usize, usize),
        surface: bool,
    ) -> Result<Self> {
        crate::driver::require_driver()?;
        if width == 0 || height == 0 || depth == 0 {
            return Err(Error::BadRegion {
                what: "a CUDA array".into(),
                why: format!("its extent {width} × {height} × {depth} has a zero side"),
            });
        }
        // The driver's convention: 1D arrays have height and depth 0, 2D arrays depth 0.
        let desc = |flags| sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: width,
            Height: if height == 1 && depth == 1 { 0 } else { height },
            Depth: if depth == 1 { 0 } else { depth },
            Format: T::FORMAT,
            NumChannels: T::CHANNELS,
            Flags: flags,
        };
        let _current = CurrentContext::save();
        ctx.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
        let create = |flags| {
            let mut handle = core::ptr::null_mut();
            // SAFETY: a valid descriptor; the handle is written on success.
            unsafe { sys::cuArray3DCreate_v2(&mut handle, &desc(flags)) }
                .result()
                .map(|()| handle)
        };
        // Surface-capable where the device allows it (surfaces can have lower extent limits than
        // arrays: 1D ones do on the H200); otherwise a plain array, zeroed by copies. The limits
        // are asked first, so that no driver call fails on the way.
        let capable = if surface && surface_fits(ctx, (width, height, depth)) {
            create(sys::CUDA_ARRAY3D_SURFACE_LDST).ok()
        } else {
            None
        };
        let (handle, surface) = match capable {
            Some(handle) => (handle, surface_of(handle)),
            None => (create(0).map_err(driver("cuArray3DCreate"))?, None),
        };
        Ok(CudaArray {
            handle,
            extent: (width, height, depth),
            ctx: ctx.clone(),
            surface,
            last: Mutex::new(None),
            _elem: core::marker::PhantomData,
        })
    }

    /// Whether the array is zeroed by the surface-store kernel (`false`: by a copy from a zero
    /// buffer, for an array the driver would not make surface-capable).
    pub fn zeroes_by_kernel(&self) -> bool {
        self.surface.is_some()
    }

    /// A new array of this extent with every element `+0.0`, ordered on `stream`.
    pub fn zeroed(stream: &CudaStream, width: usize, height: usize, depth: usize) -> Result<Self> {
        let mut a = Self::new(stream.context(), width, height, depth)?;
        let whole = a.whole();
        crate::zero_region(crate::On::Stream(stream), &mut a, whole)?;
        Ok(a)
    }

    /// A zeroed array of the same extent and context: a shadow for this one.
    pub fn shadow_like(&self, stream: &CudaStream) -> Result<Self> {
        let (w, h, d) = self.extent;
        Self::zeroed(stream, w, h, d)
    }

    /// Width, height, depth in elements.
    pub fn extent(&self) -> (usize, usize, usize) {
        self.extent
    }

    /// The box of the whole array.
    pub fn whole(&self) -> crate::Pitched {
        let (w, h, d) = self.extent;
        crate::Pitched::slices(0, w, h, d, w * size_of::<T>(), h)
    }

    /// The box at `(x, y, z)` of `width × height × depth` elements.
    pub fn region(
        &self,
        (x, y, z): (usize, usize, usize),
        (width, height, depth): (usize, usize, usize),
    ) -> crate::Pitched {
        let (w, h, _) = self.extent;
        // A box that does not fit the array gets an offset past its end (refused with
        // `BadRegion` when used), never an overflow.
        let offset = z
            .checked_mul(h)
            .and_then(|v| v.checked_add(y))
            .and_then(|v| v.checked_mul(w))
            .and_then(|v| v.checked_add(x))
            .unwrap_or(usize::MAX);
        crate::Pitched::slices(offset, width, height, depth, w * size_of::<T>(), h)
    }

    /// The raw handle (for the user's own driver calls: copies into and out of the array).
    pub fn cu_array(&self) -> sys::CUarray {
        self.handle
    }

    /// The context the array belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Copies `data` (the whole array, x fastest) in from host memory, ordered on `stream`;
    /// `data` is read before the call returns.
    pub fn copy_from_host(&mut self, stream: &CudaStream, data: &[T]) -> Result<()> {
        crate::error::check_len("the host data for a CUDA array", self.len(), data.len())?;
        self.array_ref()
            .host_copy(stream, data.as_ptr() as u64, true)?;
        stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize (array upload)"))
    }

    /// The whole array, copied out to host memory once the work queued on `stream` is done.
    pub fn to_host(&self, stream: &CudaStream) -> Result<Vec<T>> {
        let mut v = vec![T::zero(); self.len()];
        self.array_ref()
            .host_copy(stream, v.as_mut_ptr() as u64, false)?;
        stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize (array download)"))?;
        Ok(v)
    }

    pub(crate) fn array_ref(&self) -> ArrayRef<'_> {
        ArrayRef {
            handle: self.handle,
            extent: self.extent,
            size: size_of::<T>(),
            surface: self.surface,
            ctx: &self.ctx,
            last: Some(&self.last),
        }
    }
}

impl<T: ArrayElement> Drop for CudaArray<T> {
    fn drop(&mut self) {
        let _current = CurrentContext::save();
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        let last = self
            .last
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(e) = last {
            // The runtime's last work on the array must be done before it is destroyed.
            // SAFETY: a live event of this context.
            unsafe {
                let _ = result::event::synchronize(e);
                let _ = result::event::destroy(e);
            }
        }
        // SAFETY: the surface object and the array are ours, and no work the runtime enqueued on
        // them is pending.
        unsafe {
            if let Some(surface) = self.surface {
                let _ = sys::cuSurfObjectDestroy(surface);
            }
            let _ = sys::cuArrayDestroy(self.handle);
        }
    }
}

/// Whether the device's surfaces reach an array of this extent.
fn surface_fits(ctx: &CudaContext, (w, h, d): (usize, usize, usize)) -> bool {
    use sys::CUdevice_attribute as A;
    let limits: &[(A, usize)] = match (h, d) {
        (1, 1) => &[(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH, w)],
        (_, 1) => &[
            (A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH, w),
            (A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT, h),
        ],
        _ => &[
            (A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH, w),
            (A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT, h),
            (A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH, d),
        ],
    };
    limits.iter().all(|&(a, side)| {
        ctx.attribute(a)
            .is_ok_and(|max| usize::try_from(max).is_ok_and(|max| side <= max))
    })
}

/// A surface object over the whole of `array` (surface-capable, of the current context), or
/// `None` if the driver will not make one.
fn surface_of(array: sys::CUarray) -> Option<sys::CUsurfObject> {
    let desc = sys::CUDA_RESOURCE_DESC {
        resType: sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY,
        res: sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1 {
            array: sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 { hArray: array },
        },
        flags: 0,
    };
    let mut surface = 0;
    // SAFETY: a valid resource description of a live array; the object is written on success.
    let r = unsafe { sys::cuSurfObjectCreate(&mut surface, &desc) };
    r.result().ok().map(|()| surface)
}

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
    handle: sys::CUarray,
    surface: Option<sys::CUsurfObject>,
    dims: u32,
    /// The box's first element.
    origin: (usize, usize, usize),
    /// The box's width, height and depth.
    shape: (usize, usize, usize),
    /// Bytes per element.
    size: usize,
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

    /// This box as one side of a box copy.
    pub(crate) fn at(&self) -> (At, u64, u64) {
        let (x, y, z) = self.origin;
        (
            At::Array {
                handle: self.handle,
                x,
                y,
                z,
            },
            0,
            0,
        )
    }

    /// The box's surface side, if the array has a surface and the box's far corner fits the
    /// kernels' 32-bit coordinates.
    pub(crate) fn surface(&self) -> Option<SurfaceBox> {
        let ((x, y, z), (w, h, d)) = (self.origin, self.shape);
        let fits = |v: Option<usize>| v.is_some_and(|v| i32::try_from(v).is_ok());
        let fit = fits(x.checked_add(w).and_then(|e| e.checked_mul(self.size)))
            && fits(y.checked_add(h))
            && fits(z.checked_add(d));
        Some(SurfaceBox {
            surface: self.surface.filter(|_| fit)?,
            dims: self.dims,
            x,
            y,
            z,
        })
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

    /// The whole array copied from (`to_array`) or to host memory `host` (the whole array, x
    /// fastest), on `stream`, ordered after the array's last work; the caller waits for the
    /// stream before it uses `host` again.
    fn host_copy(&self, stream: &CudaStream, host: u64, to_array: bool) -> Result<()> {
        // The caller waits for the stream, which a graph capture cannot record.
        if crate::driver::capturing(stream)? {
            return Err(Error::Capturing {
                op: "a CUDA array's host copy",
            });
        }
        if self.ctx.cu_ctx() != stream.context().cu_ctx() {
            return Err(Error::ContextMismatch {
                what: "a CUDA array".into(),
                expected: stream.context().ordinal(),
                found: self.ctx.ordinal(),
            });
        }
        self.wait(stream)?;
        let (w, h, d) = self.extent;
        let whole = (
            At::Array {
                handle: self.handle,
                x: 0,
                y: 0,
                z: 0,
            },
            0,
            0,
        );
        let linear = (At::Host(host), w as u64, (w * h) as u64);
        let (dst, src) = if to_array {
            (whole, linear)
        } else {
            (linear, whole)
        };
        // SAFETY: the caller's host memory holds the whole array (checked by the callers) and is
        // not used until the stream has been synchronised; the array is ours to copy.
        unsafe { copy_box(stream, self.size, dst, src, (w as u64, h as u64, d as u64))? };
        self.record(stream)
    }
}

impl ArrayRef<'_> {
    /// 1, 2 or 3, as the driver sees the array (see [`CudaArray::new`]).
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

// SAFETY: array memory has no address: `host` and `device` answer `None`, and the runtime reaches
// it only through `array`, whose handle and extent are the array's own.
unsafe impl<T: ArrayElement> ShadowRead for CudaArray<T> {
    type Elem = T;
    fn kind(&self) -> MemoryKind {
        MemoryKind::Array
    }
    fn len(&self) -> usize {
        let (w, h, d) = self.extent;
        w * h * d
    }
    fn region(&self) -> Region {
        // No address: an empty range, which overlaps nothing (two arrays are compared by handle).
        Region { start: 0, end: 0 }
    }
    fn context(&self) -> Option<&Arc<CudaContext>> {
        Some(&self.ctx)
    }
    fn host(&self) -> Result<Option<&[T]>> {
        Ok(None)
    }
    fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
    fn array(&self) -> Option<ArrayRef<'_>> {
        Some(self.array_ref())
    }
}

// SAFETY: as above; `&mut self` gives exclusive access to the array.
unsafe impl<T: ArrayElement> ShadowMemory for CudaArray<T> {
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        Ok(None)
    }
    fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel_bytes(f: sys::CUarray_format) -> usize {
        match f {
            sys::CUarray_format::CU_AD_FORMAT_FLOAT
            | sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32 => 4,
            sys::CUarray_format::CU_AD_FORMAT_HALF
            | sys::CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16 => 2,
            _ => 0,
        }
    }

    fn check<T: ArrayElement>() {
        assert_eq!(
            channel_bytes(T::FORMAT) * T::CHANNELS as usize,
            size_of::<T>()
        );
    }

    #[test]
    fn formats_match_element_sizes() {
        check::<f32>();
        check::<f64>();
        check::<f16>();
        check::<bf16>();
        check::<Complex<f32>>();
        check::<Complex<f64>>();
    }
}
