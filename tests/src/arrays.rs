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
//!
//! Each primitive is a safe function that is sound when called directly, not only through its
//! rule: the driver copies whatever box it is given, so each checks its own boxes against its own
//! buffers ([`array_box_fits`], [`linear_box_fits`]) and answers `CUDA_ERROR_INVALID_VALUE`
//! before any driver call. Borrowed host memory (a slice, which may be page-locked memory seen as
//! one) is finished with before the primitive returns.

use rules_runtime::cudarc::driver::sys::{self, CUmemorytype};
use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, DriverError, HostSlice, PinnedHostSlice, UnifiedSlice,
    ValidAsZeroBits,
};
use rules_runtime::derivative_rule;
use rules_runtime::memory::array::{ArrayElement, CudaArray};
use rules_runtime::memory::raw::RawShadow;
use rules_runtime::{MemoryKind, ShadowMemory, ShadowRead};
use std::sync::Arc;

/// What a primitive answers, before any driver call, for a box that does not fit its buffer or
/// its array: the driver's own answer to a bad copy descriptor.
pub fn invalid_value() -> DriverError {
    DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE)
}

/// Checks that the box of `width × height × depth` elements at `(x, y, z)` lies inside an array
/// of extent `(w, h, d)`: the driver copies whatever box it is given. An empty box touches
/// nothing and fits.
pub fn array_box_fits(
    (w, h, d): (usize, usize, usize),
    (x, y, z): (usize, usize, usize),
    (width, height, depth): (usize, usize, usize),
) -> Result<(), DriverError> {
    if width == 0 || height == 0 || depth == 0 {
        return Ok(());
    }
    let within = |at: usize, n: usize, side: usize| at.checked_add(n).is_some_and(|e| e <= side);
    if within(x, width, w) && within(y, height, h) && within(z, depth, d) {
        Ok(())
    } else {
        Err(invalid_value())
    }
}

/// Checks that a box of `width × height × depth` elements of `T`, rows `pitch` bytes apart and
/// slices `rows` rows apart (as `CUDA_MEMCPY3D` places them from the start of the memory), lies
/// inside `len` elements: the driver reads or writes whatever the descriptor says. A row must
/// fit its pitch and a slice its rows (or the box is not one); the last byte touched is the end
/// of the last row of the last slice, since every stride only moves a row further. An empty box
/// touches nothing and fits.
pub fn linear_box_fits<T>(
    len: usize,
    pitch: usize,
    rows: usize,
    (width, height, depth): (usize, usize, usize),
) -> Result<(), DriverError> {
    if width == 0 || height == 0 || depth == 0 {
        return Ok(());
    }
    let size = size_of::<T>();
    let row = width.checked_mul(size).ok_or_else(invalid_value)?;
    if ((height > 1 || depth > 1) && row > pitch) || (depth > 1 && rows < height) {
        return Err(invalid_value());
    }
    let end = (depth - 1)
        .checked_mul(rows)
        .and_then(|r| r.checked_add(height - 1))
        .and_then(|r| r.checked_mul(pitch))
        .and_then(|b| b.checked_add(row));
    match (end, len.checked_mul(size)) {
        (Some(end), Some(bytes)) if end <= bytes => Ok(()),
        _ => Err(invalid_value()),
    }
}

/// Checks that `len` elements are the whole of an array of extent `(w, h, d)`.
fn whole_array(len: usize, (w, h, d): (usize, usize, usize)) -> Result<(), DriverError> {
    match w.checked_mul(h).and_then(|n| n.checked_mul(d)) {
        Some(n) if n == len => Ok(()),
        _ => Err(invalid_value()),
    }
}

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
///
/// # Safety
/// The primitives enqueue driver copies at the address `with_addr` gives, within the
/// [`ShadowRead::len`] elements it checked, so an implementation must guarantee: `f` is given the
/// address of exactly those `len()` elements and their memory type, valid for the copy `f`
/// enqueues on `stream`; that copy is ordered after the buffer's pending work and before its
/// later users; and borrowed host memory (which may be page-locked memory seen as a slice) is
/// no longer read or written by the copy when `with_addr` returns.
pub unsafe trait Linear: ShadowMemory {
    /// Calls `f(type, address)`, which enqueues one copy on `stream`.
    fn with_addr(
        &self,
        stream: &CudaStream,
        f: impl FnOnce(CUmemorytype, u64) -> Result<(), DriverError>,
    ) -> Result<(), DriverError>;
}

// SAFETY: the slice's own elements; the stream is waited for before returning, so the copy has
// finished with the borrowed memory (a pageable copy may return early: page-locked memory).
unsafe impl<T: rules_runtime::Differentiable> Linear for [T] {
    fn with_addr(
        &self,
        stream: &CudaStream,
        f: impl FnOnce(CUmemorytype, u64) -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        let copied = f(CUmemorytype::CU_MEMORYTYPE_HOST, self.as_ptr() as u64);
        // Waited for even when the copy failed: a failure does not say nothing was enqueued.
        let waited = stream.synchronize();
        copied.and(waited)
    }
}

// SAFETY: as for `[T]`.
unsafe impl<T: rules_runtime::Differentiable> Linear for Vec<T> {
    fn with_addr(
        &self,
        s: &CudaStream,
        f: impl FnOnce(CUmemorytype, u64) -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        self.as_slice().with_addr(s, f)
    }
}

// SAFETY: cudarc's device address of the buffer's `len()` elements; its guard orders the copy
// after the buffer's pending work and records it for later users.
unsafe impl<T: rules_runtime::Differentiable + rules_runtime::cudarc::driver::DeviceRepr> Linear
    for CudaSlice<T>
{
    fn with_addr(
        &self,
        s: &CudaStream,
        f: impl FnOnce(CUmemorytype, u64) -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        let (ptr, _sync) = self.device_ptr(s);
        f(CUmemorytype::CU_MEMORYTYPE_DEVICE, ptr)
    }
}

// SAFETY: as for `CudaSlice`: the buffer's events order the copy, which reads or writes owned
// page-locked memory.
unsafe impl<T: rules_runtime::Differentiable + ValidAsZeroBits> Linear for PinnedHostSlice<T> {
    fn with_addr(
        &self,
        s: &CudaStream,
        f: impl FnOnce(CUmemorytype, u64) -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        // SAFETY: the address is used only by the copy enqueued on `s` inside `f`; the guard
        // records the buffer's event after it.
        let (slice, _sync) = unsafe { self.stream_synced_slice(s) };
        f(CUmemorytype::CU_MEMORYTYPE_HOST, slice.as_ptr() as u64)
    }
}

// SAFETY: as for `CudaSlice`.
unsafe impl<T: rules_runtime::Differentiable + ValidAsZeroBits> Linear for UnifiedSlice<T> {
    fn with_addr(
        &self,
        s: &CudaStream,
        f: impl FnOnce(CUmemorytype, u64) -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        let (ptr, _sync) = self.device_ptr(s);
        f(CUmemorytype::CU_MEMORYTYPE_UNIFIED, ptr)
    }
}

// SAFETY: the `len()` elements that `RawShadow::new`'s caller vouched for, in the declared kind;
// host memory is finished with before returning, as for `[T]`.
unsafe impl<T: rules_runtime::Differentiable> Linear for RawShadow<T> {
    fn with_addr(
        &self,
        s: &CudaStream,
        f: impl FnOnce(CUmemorytype, u64) -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        let host = matches!(self.kind(), MemoryKind::Host | MemoryKind::Pinned);
        let t = match self.kind() {
            MemoryKind::Host | MemoryKind::Pinned => CUmemorytype::CU_MEMORYTYPE_HOST,
            MemoryKind::Device => CUmemorytype::CU_MEMORYTYPE_DEVICE,
            _ => CUmemorytype::CU_MEMORYTYPE_UNIFIED,
        };
        let copied = f(t, self.as_ptr() as u64);
        if host {
            // As for `[T]`.
            copied.and(s.synchronize())
        } else {
            copied
        }
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
    let shape = (width, height, depth);
    array_box_fits(dst.extent(), (x, y, z), shape)?;
    linear_box_fits::<T>(src.len(), src_pitch, src_rows, shape)?;
    let a = End::Array(dst.cu_array(), (x, y, z), size_of::<T>());
    src.with_addr(stream, |t, addr| {
        let s = End::Linear(t, addr, src_pitch, src_rows);
        // SAFETY: both boxes were checked above against the array and the `len()` elements at
        // `addr` (`Linear`'s contract).
        unsafe { memcpy3d(stream, a, s, size_of::<T>(), shape) }
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
    let shape = (width, height, depth);
    array_box_fits(src.extent(), (x, y, z), shape)?;
    linear_box_fits::<T>(dst.len(), dst_pitch, dst_rows, shape)?;
    let a = End::Array(src.cu_array(), (x, y, z), size_of::<T>());
    dst.with_addr(stream, |t, addr| {
        let d = End::Linear(t, addr, dst_pitch, dst_rows);
        // SAFETY: as in `to_array`.
        unsafe { memcpy3d(stream, d, a, size_of::<T>(), shape) }
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
    array_box_fits(dst.extent(), (x, y, 0), (width, height, 1))?;
    linear_box_fits::<T>(src.len(), src_pitch, height, (width, height, 1))?;
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
    let (size, shape) = (size_of::<T>(), (width, height, depth));
    array_box_fits(dst.extent(), (dx, dy, dz), shape)?;
    array_box_fits(src.extent(), (sx, sy, sz), shape)?;
    let d = End::Array(dst.cu_array(), (dx, dy, dz), size);
    let s = End::Array(src.cu_array(), (sx, sy, sz), size);
    // SAFETY: both boxes were checked above against their arrays.
    unsafe { memcpy3d(stream, d, s, size, shape) }
}

/// A whole array from host memory (x fastest): a plain `copy` rule.
#[derivative_rule(copy)]
pub fn upload_array<T: ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[src] src: &[T],
) -> Result<(), DriverError> {
    let (w, h, d) = dst.extent();
    whole_array(src.len(), (w, h, d))?;
    let a = End::Array(dst.cu_array(), (0, 0, 0), size_of::<T>());
    src.with_addr(stream, |t, addr| {
        let s = End::Linear(t, addr, w * size_of::<T>(), h);
        // SAFETY: `src` holds the whole array, packed (checked above).
        unsafe { memcpy3d(stream, a, s, size_of::<T>(), (w, h, d)) }
    })
}

/// A whole array into host memory (x fastest): a plain `copy` rule.
#[derivative_rule(copy)]
pub fn download_array<T: ArrayElement>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [T],
    #[src] src: &CudaArray<T>,
) -> Result<(), DriverError> {
    let (w, h, d) = src.extent();
    // Without this check, 16 elements received a 128 × 128 array and the heap was corrupted.
    whole_array(dst.len(), (w, h, d))?;
    let a = End::Array(src.cu_array(), (0, 0, 0), size_of::<T>());
    // The stream is waited for there: the caller reads `dst` next.
    dst.with_addr(stream, |t, addr| {
        let l = End::Linear(t, addr, w * size_of::<T>(), h);
        // SAFETY: `dst` holds the whole array, packed (checked above).
        unsafe { memcpy3d(stream, l, a, size_of::<T>(), (w, h, d)) }
    })
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
    let shape = (width, height, depth);
    array_box_fits(dst.extent(), (x, y, z), shape)?;
    // In the array, so the count fits.
    let src = vec![value; width * height * depth];
    let a = End::Array(dst.cu_array(), (x, y, z), size_of::<T>());
    // `with_addr` waits for the stream: `src` lives until the copy has finished with it.
    src.with_addr(stream, |t, addr| {
        let s = End::Linear(t, addr, width * size_of::<T>(), height);
        // SAFETY: `src` holds the packed box; the array's box was checked above.
        unsafe { memcpy3d(stream, a, s, size_of::<T>(), shape) }
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_array_needs_exactly_its_elements() {
        // The H200 case: a 128 × 128 array into 16 floats.
        assert_eq!(whole_array(16, (128, 128, 1)), Err(invalid_value()));
        assert_eq!(
            whole_array(128 * 128 + 1, (128, 128, 1)),
            Err(invalid_value())
        );
        assert_eq!(whole_array(128 * 128, (128, 128, 1)), Ok(()));
        assert_eq!(whole_array(0, (usize::MAX, 2, 1)), Err(invalid_value()));
    }

    #[test]
    fn array_boxes_must_lie_inside_the_array() {
        let ext = (128, 64, 4);
        assert_eq!(array_box_fits(ext, (0, 0, 0), ext), Ok(()));
        assert_eq!(array_box_fits(ext, (120, 60, 3), (8, 4, 1)), Ok(()));
        for (at, shape) in [
            ((121, 0, 0), (8, 1, 1)),
            ((0, 61, 0), (1, 4, 1)),
            ((0, 0, 4), (1, 1, 1)),
            ((usize::MAX, 0, 0), (2, 1, 1)),
            ((0, 0, 0), (129, 1, 1)),
        ] {
            assert_eq!(
                array_box_fits(ext, at, shape),
                Err(invalid_value()),
                "{at:?} {shape:?}"
            );
        }
        // An empty box touches nothing.
        assert_eq!(array_box_fits(ext, (500, 0, 0), (0, 1, 1)), Ok(()));
    }

    #[test]
    fn linear_boxes_must_lie_inside_their_elements() {
        // 16 f32: one packed row of 16, or 4 rows of 4 (pitch 16 bytes), or 2 slices of 2 rows.
        assert_eq!(linear_box_fits::<f32>(16, 64, 1, (16, 1, 1)), Ok(()));
        assert_eq!(linear_box_fits::<f32>(16, 16, 4, (4, 4, 1)), Ok(()));
        assert_eq!(linear_box_fits::<f32>(16, 16, 2, (4, 2, 2)), Ok(()));
        // The last row may end before its pitch does.
        assert_eq!(linear_box_fits::<f32>(13, 16, 4, (1, 4, 1)), Ok(()));
        for (len, pitch, rows, shape, why) in [
            (16, 64, 4, (16, 4, 1), "4 rows of 16 in 16 elements"),
            (15, 16, 4, (4, 4, 1), "one element short"),
            (16, 8, 4, (4, 2, 1), "a row longer than its pitch"),
            (64, 16, 1, (4, 2, 2), "slices of 1 row for boxes of 2"),
            (16, 16, 3, (4, 2, 2), "the second slice past the end"),
            (16, usize::MAX, 2, (1, 2, 1), "a pitch that overflows"),
            (usize::MAX, 4, 1, (usize::MAX, 1, 1), "a row that overflows"),
        ] {
            assert_eq!(
                linear_box_fits::<f32>(len, pitch, rows, shape),
                Err(invalid_value()),
                "{why}"
            );
        }
        assert_eq!(linear_box_fits::<f64>(0, 0, 0, (0, 5, 5)), Ok(()));
    }
}
