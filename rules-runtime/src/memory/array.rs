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
//!
//! Here: the type, its creation and release, and what it is as a memory kind. Its methods that
//! copy (`copy_from_host`, `to_host`) are with the driver's box copies in `device/array.rs`; the
//! ones that zero (`zeroed`, `shadow_like`) with the region operations in `ops/region/array.rs`.

mod place;

pub use place::ArrayRef;
pub(crate) use place::Place;

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory, ShadowRead};
use crate::driver::driver;
use crate::driver::pool::CurrentContext;
use crate::element::Differentiable;
use crate::error::{Error, Result};
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

    /// Width, height, depth in elements.
    pub fn extent(&self) -> (usize, usize, usize) {
        self.extent
    }

    /// The box of the whole array.
    pub fn whole(&self) -> crate::region::Pitched {
        let (w, h, d) = self.extent;
        crate::region::Pitched::slices(0, w, h, d, w * size_of::<T>(), h)
    }

    /// The box at `(x, y, z)` of `width × height × depth` elements.
    pub fn region(
        &self,
        (x, y, z): (usize, usize, usize),
        (width, height, depth): (usize, usize, usize),
    ) -> crate::region::Pitched {
        let (w, h, _) = self.extent;
        // A box that does not fit the array gets an offset past its end (refused with
        // `BadRegion` when used), never an overflow.
        let offset = z
            .checked_mul(h)
            .and_then(|v| v.checked_add(y))
            .and_then(|v| v.checked_mul(w))
            .and_then(|v| v.checked_add(x))
            .unwrap_or(usize::MAX);
        crate::region::Pitched::slices(offset, width, height, depth, w * size_of::<T>(), h)
    }

    /// The raw handle (for the user's own driver calls: copies into and out of the array).
    pub fn cu_array(&self) -> sys::CUarray {
        self.handle
    }

    /// The context the array belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
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
