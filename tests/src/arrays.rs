//! Copy primitives between CUDA arrays and linear memory, written as a user writes them: the raw
//! driver's `cuMemcpy3DAsync` with [`CudaArray::cu_array`], annotated with
//! `#[derivative_rule(copy2d / copy3d / copy)]`. The array side's box is placed by its origin
//! (`#[dst_x]`, `#[dst_y]`, `#[dst_z]`, or the source's), in elements; its layout is the array's.
//!
//! The linear side is any [`Linear`] buffer: pageable host slices, cudarc device buffers, pinned
//! host buffers (`alloc_pinned`), unified buffers (`alloc_unified`), and raw pointers of any
//! declared kind ([`RawShadow`]).
//!
//! Region rules whose destination is an array: [`zero_array_rows`] and [`zero_array`] (`memset`,
//! rows placed by `#[dst_x]`, `#[dst_y]`, or the whole array), [`fill_array_rows`] and
//! [`fill_array`] (`fill`), and [`to_array_restoring`] (`copy3d` with `restore`).

use rules_runtime::cudarc::driver::sys::{self, CUmemorytype};
use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, DriverError, HostSlice, PinnedHostSlice, UnifiedSlice,
    ValidAsZeroBits,
};
use rules_runtime::derivative_rule;
use rules_runtime::memory::array::{ArrayElement, CudaArray};
use rules_runtime::memory::raw::RawShadow;
use rules_runtime::{MemoryKind, ShadowMemory};
use std::sync::Arc;

/// One side of a box copy, as `CUDA_MEMCPY3D` describes it.
#[derive(Clone, Copy, Debug)]
pub enum End {
    /// Linear memory: its memory type, address, pitch (bytes) and rows per slice.
    Linear(CUmemorytype, u64, usize, usize),
    /// A box of an array at `(x, y, z)` elements, of `size`-byte elements.
    Array(sys::CUarray, (usize, usize, usize), usize),
}

/// `cuMemcpy3DAsync` of `width × height × depth` elements of `size` bytes, `dst ← src`.
///
/// # Safety
/// Both ends valid for the box.
pub unsafe fn memcpy3d(
    stream: &CudaStream,
    dst: End,
    src: End,
    size: usize,
    (width, height, depth): (usize, usize, usize),
) -> Result<(), DriverError> {
    let mut c = sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: CUmemorytype::CU_MEMORYTYPE_HOST,
        srcHost: core::ptr::null(),
        srcDevice: 0,
        srcArray: core::ptr::null_mut(),
        reserved0: core::ptr::null_mut(),
        srcPitch: 0,
        srcHeight: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: CUmemorytype::CU_MEMORYTYPE_HOST,
        dstHost: core::ptr::null_mut(),
        dstDevice: 0,
        dstArray: core::ptr::null_mut(),
        reserved1: core::ptr::null_mut(),
        dstPitch: 0,
        dstHeight: 0,
        WidthInBytes: width * size,
        Height: height,
        Depth: depth,
    };
    match src {
        End::Linear(t, addr, pitch, rows) => {
            c.srcMemoryType = t;
            if t == CUmemorytype::CU_MEMORYTYPE_HOST {
                c.srcHost = addr as *const _;
            } else {
                c.srcDevice = addr;
            }
            (c.srcPitch, c.srcHeight) = (pitch, rows);
        }
        End::Array(a, (x, y, z), size) => {
            c.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_ARRAY;
            c.srcArray = a;
            (c.srcXInBytes, c.srcY, c.srcZ) = (x * size, y, z);
        }
    }
    match dst {
        End::Linear(t, addr, pitch, rows) => {
            c.dstMemoryType = t;
            if t == CUmemorytype::CU_MEMORYTYPE_HOST {
                c.dstHost = addr as *mut _;
            } else {
                c.dstDevice = addr;
            }
            (c.dstPitch, c.dstHeight) = (pitch, rows);
        }
        End::Array(a, (x, y, z), size) => {
            c.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_ARRAY;
            c.dstArray = a;
            (c.dstXInBytes, c.dstY, c.dstZ) = (x * size, y, z);
        }
    }
    // SAFETY: the caller's contract; the descriptor is read before the call returns.
    unsafe { sys::cuMemcpy3DAsync_v2(&c, stream.cu_stream()) }.result()
}

/// Linear memory a box copy can read or write: its memory type and address, given to `f` while
/// the buffer's own synchronisation (cudarc's events) holds.
pub trait Linear: ShadowMemory {
    /// Calls `f(type, address)`.
    fn with_addr<R>(&self, stream: &CudaStream, f: impl FnOnce(CUmemorytype, u64) -> R) -> R;
}

impl<T: rules_runtime::Differentiable> Linear for [T] {
    fn with_addr<R>(&self, _: &CudaStream, f: impl FnOnce(CUmemorytype, u64) -> R) -> R {
        f(CUmemorytype::CU_MEMORYTYPE_HOST, self.as_ptr() as u64)
    }
}

impl<T: rules_runtime::Differentiable> Linear for Vec<T> {
    fn with_addr<R>(&self, s: &CudaStream, f: impl FnOnce(CUmemorytype, u64) -> R) -> R {
        self.as_slice().with_addr(s, f)
    }
}

impl<T: rules_runtime::Differentiable + rules_runtime::cudarc::driver::DeviceRepr> Linear
    for CudaSlice<T>
{
    fn with_addr<R>(&self, s: &CudaStream, f: impl FnOnce(CUmemorytype, u64) -> R) -> R {
        let (ptr, _sync) = self.device_ptr(s);
        f(CUmemorytype::CU_MEMORYTYPE_DEVICE, ptr)
    }
}

impl<T: rules_runtime::Differentiable + ValidAsZeroBits> Linear for PinnedHostSlice<T> {
    fn with_addr<R>(&self, s: &CudaStream, f: impl FnOnce(CUmemorytype, u64) -> R) -> R {
        // SAFETY: the address is used only by the copy enqueued on `s` inside `f`; the guard
        // records the buffer's event after it.
        let (slice, _sync) = unsafe { self.stream_synced_slice(s) };
        f(CUmemorytype::CU_MEMORYTYPE_HOST, slice.as_ptr() as u64)
    }
}

impl<T: rules_runtime::Differentiable + ValidAsZeroBits> Linear for UnifiedSlice<T> {
    fn with_addr<R>(&self, s: &CudaStream, f: impl FnOnce(CUmemorytype, u64) -> R) -> R {
        let (ptr, _sync) = self.device_ptr(s);
        f(CUmemorytype::CU_MEMORYTYPE_UNIFIED, ptr)
    }
}

impl<T: rules_runtime::Differentiable> Linear for RawShadow<T> {
    fn with_addr<R>(&self, _: &CudaStream, f: impl FnOnce(CUmemorytype, u64) -> R) -> R {
        let t = match rules_runtime::ShadowRead::kind(self) {
            MemoryKind::Host | MemoryKind::Pinned => CUmemorytype::CU_MEMORYTYPE_HOST,
            MemoryKind::Device => CUmemorytype::CU_MEMORYTYPE_DEVICE,
            _ => CUmemorytype::CU_MEMORYTYPE_UNIFIED,
        };
        f(t, self.as_ptr() as u64)
    }
}

/// Linear rows into a box of an array: `dst[(x, y, z) ..][box] ← src[box]`, `src`'s rows
/// `src_pitch` bytes apart and its slices `src_rows` rows apart.
#[derivative_rule(copy3d)]
#[allow(clippy::too_many_arguments)]
pub fn to_array<T: ArrayElement, L: Linear<Elem = T> + ?Sized>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[dst_z] z: usize,
    #[src] src: &L,
    #[src_pitch] src_pitch: usize,
    #[src_slice_height] src_rows: usize,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
) -> Result<(), DriverError> {
    let a = End::Array(dst.cu_array(), (x, y, z), size_of::<T>());
    src.with_addr(stream, |t, addr| {
        let s = End::Linear(t, addr, src_pitch, src_rows);
        // SAFETY: the runtime checked both boxes before calling the primitive.
        unsafe { memcpy3d(stream, a, s, size_of::<T>(), (width, height, depth)) }
    })
}

/// A box of an array into linear rows: `dst[box] ← src[(x, y, z) ..][box]`, `dst`'s rows
/// `dst_pitch` bytes apart and its slices `dst_rows` rows apart.
#[derivative_rule(copy3d)]
#[allow(clippy::too_many_arguments)]
pub fn from_array<T: ArrayElement, L: Linear<Elem = T> + ?Sized>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut L,
    #[dst_pitch] dst_pitch: usize,
    #[dst_slice_height] dst_rows: usize,
    #[src] src: &CudaArray<T>,
    #[src_x] x: usize,
    #[src_y] y: usize,
    #[src_z] z: usize,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
) -> Result<(), DriverError> {
    let a = End::Array(src.cu_array(), (x, y, z), size_of::<T>());
    dst.with_addr(stream, |t, addr| {
        let d = End::Linear(t, addr, dst_pitch, dst_rows);
        // SAFETY: as in `to_array`.
        unsafe { memcpy3d(stream, d, a, size_of::<T>(), (width, height, depth)) }
    })
}

/// A 2-D box of device rows into an array at `(x, y)`: a `copy2d` rule.
#[derivative_rule(copy2d)]
#[allow(clippy::too_many_arguments)]
pub fn rows_to_array<T: ArrayElement + rules_runtime::cudarc::driver::DeviceRepr>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src] src: &CudaSlice<T>,
    #[src_pitch] src_pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    let a = End::Array(dst.cu_array(), (x, y, 0), size_of::<T>());
    src.with_addr(stream, |t, addr| {
        let s = End::Linear(t, addr, src_pitch, height);
        // SAFETY: as in `to_array`.
        unsafe { memcpy3d(stream, a, s, size_of::<T>(), (width, height, 1)) }
    })
}

/// A box of one array into a box of another (or of the same one).
#[derivative_rule(copy3d)]
#[allow(clippy::too_many_arguments)]
pub fn array_to_array<T: ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[dst_x] dx: usize,
    #[dst_y] dy: usize,
    #[dst_z] dz: usize,
    #[src] src: &CudaArray<T>,
    #[src_x] sx: usize,
    #[src_y] sy: usize,
    #[src_z] sz: usize,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
) -> Result<(), DriverError> {
    let size = size_of::<T>();
    let d = End::Array(dst.cu_array(), (dx, dy, dz), size);
    let s = End::Array(src.cu_array(), (sx, sy, sz), size);
    // SAFETY: as in `to_array`.
    unsafe { memcpy3d(stream, d, s, size, (width, height, depth)) }
}

/// A whole array from host memory (x fastest): a plain `copy` rule.
#[derivative_rule(copy)]
pub fn upload_array<T: ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[src] src: &[T],
) -> Result<(), DriverError> {
    let (w, h, d) = dst.extent();
    let a = End::Array(dst.cu_array(), (0, 0, 0), size_of::<T>());
    let s = End::Linear(
        CUmemorytype::CU_MEMORYTYPE_HOST,
        src.as_ptr() as u64,
        w * size_of::<T>(),
        h,
    );
    // SAFETY: the runtime checked that `src` holds the whole array.
    unsafe { memcpy3d(stream, a, s, size_of::<T>(), (w, h, d)) }
}

/// A whole array into host memory (x fastest): a plain `copy` rule.
#[derivative_rule(copy)]
pub fn download_array<T: ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [T],
    #[src] src: &CudaArray<T>,
) -> Result<(), DriverError> {
    let (w, h, d) = src.extent();
    let a = End::Array(src.cu_array(), (0, 0, 0), size_of::<T>());
    let t = End::Linear(
        CUmemorytype::CU_MEMORYTYPE_HOST,
        dst.as_mut_ptr() as u64,
        w * size_of::<T>(),
        h,
    );
    // SAFETY: as in `upload_array`.
    unsafe { memcpy3d(stream, t, a, size_of::<T>(), (w, h, d)) }?;
    // Pageable memory: the copy is complete when the stream is (the caller reads `dst` next).
    stream.synchronize()
}

/// [`to_array`] with `restore`: the augmented primal saves the array's old box (pooled memory
/// owned by the tape) and the reverse writes it back after the shadow work.
#[derivative_rule(copy3d, restore)]
#[allow(clippy::too_many_arguments)]
pub fn to_array_restoring<T: ArrayElement, L: Linear<Elem = T> + ?Sized>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[dst_z] z: usize,
    #[src] src: &L,
    #[src_pitch] src_pitch: usize,
    #[src_slice_height] src_rows: usize,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
) -> Result<(), DriverError> {
    to_array(
        stream, dst, x, y, z, src, src_pitch, src_rows, width, height, depth,
    )
}

/// `dst[(x, y, z) ..][box] ← value` by a copy from packed host memory (memset is invalid on
/// arrays), complete when this returns.
fn set_box<T: ArrayElement>(
    stream: &CudaStream,
    dst: &CudaArray<T>,
    (x, y, z): (usize, usize, usize),
    (width, height, depth): (usize, usize, usize),
    value: T,
) -> Result<(), DriverError> {
    let src = vec![value; width * height * depth];
    let a = End::Array(dst.cu_array(), (x, y, z), size_of::<T>());
    let s = End::Linear(
        CUmemorytype::CU_MEMORYTYPE_HOST,
        src.as_ptr() as u64,
        width * size_of::<T>(),
        height,
    );
    // SAFETY: `src` holds the packed box; the runtime checked the array's box. `src` lives until
    // the stream has finished the copy.
    unsafe { memcpy3d(stream, a, s, size_of::<T>(), (width, height, depth)) }?;
    stream.synchronize()
}

/// A memset of rows of an array: `dst[(x, y) ..][width × height] ← 0`.
#[derivative_rule(memset)]
pub fn zero_array_rows<T: ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    set_box(stream, dst, (x, y, 0), (width, height, 1), T::zero())
}

/// A memset of a whole array (1-D, 2-D or 3-D): every element `← 0`.
#[derivative_rule(memset)]
pub fn zero_array<T: ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
) -> Result<(), DriverError> {
    set_box(stream, dst, (0, 0, 0), dst.extent(), T::zero())
}

/// A fill of rows of an array: `dst[(x, y) ..][width × height] ← v`.
#[derivative_rule(fill)]
pub fn fill_array_rows<T: ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[value] v: T,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    set_box(stream, dst, (x, y, 0), (width, height, 1), v)
}

/// A fill of a whole array: every element `← v`.
#[derivative_rule(fill)]
pub fn fill_array<T: ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[value] v: T,
) -> Result<(), DriverError> {
    set_box(stream, dst, (0, 0, 0), dst.extent(), v)
}
