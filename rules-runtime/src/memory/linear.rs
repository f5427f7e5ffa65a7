//! Linear memory as one end of a driver box copy (`cuMemcpy3DAsync`), for the ready-made array
//! rules (`crate::array_rules`): the box checks a primitive makes before the driver call, the
//! copy descriptor, and [`Linear`], the buffers whose address a copy may be given.

use crate::driver::pool::CurrentContext;
use crate::error::{Error, Result};
use crate::memory::array::{ArrayElement, ArrayRef, CudaArray};
use crate::memory::raw::RawShadow;
use crate::memory::{MemoryKind, ShadowMemory, ShadowRead};
use cudarc::driver::CudaContext;
use cudarc::driver::sys::{self, CUmemorytype};
use cudarc::driver::{
    CudaSlice, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut, DriverError, HostSlice,
    PinnedHostSlice, UnifiedSlice, ValidAsZeroBits,
};
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
) -> core::result::Result<(), DriverError> {
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
) -> core::result::Result<(), DriverError> {
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
pub fn whole_array(
    len: usize,
    (w, h, d): (usize, usize, usize),
) -> core::result::Result<(), DriverError> {
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
) -> core::result::Result<(), DriverError> {
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
/// the buffer's own synchronisation (cudarc's events) holds, for reading ([`Linear::with_addr`])
/// or for writing ([`Linear::with_addr_mut`], through `&mut`, with cudarc's write tracking).
///
/// # Safety
/// The primitives enqueue driver copies at the address given, within the [`ShadowRead::len`]
/// elements they checked, so an implementation must guarantee: `f` is given the address of
/// exactly those `len()` elements and their memory type, valid for the copy `f` enqueues on
/// `stream` (for writing, in `with_addr_mut`); that copy is ordered after the buffer's pending
/// work (its reads and writes, for a write) and before its later users; and borrowed host
/// memory (which may be page-locked memory seen as a slice) is no longer read or written by the
/// copy when the method returns.
pub unsafe trait Linear: ShadowMemory {
    /// Calls `f(type, address)`, which enqueues one copy that reads the buffer on `stream`.
    fn with_addr(&self, stream: &CudaStream, f: AddrFn<'_>) -> DriverResult;
    /// Calls `f(type, address)`, which enqueues one copy that writes the buffer on `stream`.
    fn with_addr_mut(&mut self, stream: &CudaStream, f: AddrFn<'_>) -> DriverResult;
}

/// What a [`Linear`] buffer's address is given to: a function that enqueues one copy.
pub type AddrFn<'f> = &'f mut dyn FnMut(CUmemorytype, u64) -> DriverResult;

/// A driver call's result.
pub type DriverResult = core::result::Result<(), DriverError>;

/// `f` at a host address, then the stream waited for (also when `f` failed: a failure does not
/// say nothing was enqueued), so that the copy has finished with the borrowed memory when this
/// returns (a pageable copy may return early: page-locked memory seen as a slice).
fn host_then_wait(stream: &CudaStream, addr: u64, f: AddrFn<'_>) -> DriverResult {
    let copied = f(CUmemorytype::CU_MEMORYTYPE_HOST, addr);
    let waited = stream.synchronize();
    copied.and(waited)
}

// SAFETY: the slice's own elements (read through `&`, written through `&mut`); finished with
// before returning (`host_then_wait`).
unsafe impl<T: crate::element::Differentiable> Linear for [T] {
    fn with_addr(&self, stream: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        host_then_wait(stream, self.as_ptr() as u64, f)
    }
    fn with_addr_mut(&mut self, stream: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        host_then_wait(stream, self.as_mut_ptr() as u64, f)
    }
}

// SAFETY: as for `[T]` (the `Vec` is not resized while borrowed).
unsafe impl<T: crate::element::Differentiable> Linear for Vec<T> {
    fn with_addr(&self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        self.as_slice().with_addr(s, f)
    }
    fn with_addr_mut(&mut self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        self.as_mut_slice().with_addr_mut(s, f)
    }
}

// SAFETY: as for `[T]`.
unsafe impl<T: crate::element::Differentiable, const N: usize> Linear for [T; N] {
    fn with_addr(&self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        self.as_slice().with_addr(s, f)
    }
    fn with_addr_mut(&mut self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        self.as_mut_slice().with_addr_mut(s, f)
    }
}

/// Device-side buffers whose cudarc guard orders the copy: `device_ptr` (waits for writes,
/// records a read) to read, `device_ptr_mut` (waits for reads and writes, records a write) to
/// write.
// SAFETY: cudarc's device address of the buffer's `len()` elements; its guard orders the copy
// after the buffer's pending work and records it for later users (a write as a write).
unsafe impl<T: crate::element::Differentiable + cudarc::driver::DeviceRepr> Linear
    for CudaSlice<T>
{
    fn with_addr(&self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        let (ptr, _sync) = self.device_ptr(s);
        f(CUmemorytype::CU_MEMORYTYPE_DEVICE, ptr)
    }
    fn with_addr_mut(&mut self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        let (ptr, _sync) = self.device_ptr_mut(s);
        f(CUmemorytype::CU_MEMORYTYPE_DEVICE, ptr)
    }
}

// SAFETY: as for `CudaSlice`: the view's own elements and its slice's events.
unsafe impl<T: crate::element::Differentiable + cudarc::driver::DeviceRepr> Linear
    for CudaViewMut<'_, T>
{
    fn with_addr(&self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        let (ptr, _sync) = self.device_ptr(s);
        f(CUmemorytype::CU_MEMORYTYPE_DEVICE, ptr)
    }
    fn with_addr_mut(&mut self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        let (ptr, _sync) = self.device_ptr_mut(s);
        f(CUmemorytype::CU_MEMORYTYPE_DEVICE, ptr)
    }
}

// SAFETY: as for `CudaSlice`: the buffer's events order the copy, which reads or writes owned
// page-locked memory.
unsafe impl<T: crate::element::Differentiable + ValidAsZeroBits> Linear for PinnedHostSlice<T> {
    fn with_addr(&self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        // SAFETY: the address is used only by the copy enqueued on `s` inside `f`; the guard
        // records the buffer's event after it.
        let (slice, _sync) = unsafe { self.stream_synced_slice(s) };
        f(CUmemorytype::CU_MEMORYTYPE_HOST, slice.as_ptr() as u64)
    }
    fn with_addr_mut(&mut self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        // SAFETY: as in `with_addr`, for writing.
        let (slice, _sync) = unsafe { self.stream_synced_mut_slice(s) };
        f(CUmemorytype::CU_MEMORYTYPE_HOST, slice.as_mut_ptr() as u64)
    }
}

// SAFETY: as for `CudaSlice`.
unsafe impl<T: crate::element::Differentiable + ValidAsZeroBits> Linear for UnifiedSlice<T> {
    fn with_addr(&self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        let (ptr, _sync) = self.device_ptr(s);
        f(CUmemorytype::CU_MEMORYTYPE_UNIFIED, ptr)
    }
    fn with_addr_mut(&mut self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        let (ptr, _sync) = self.device_ptr_mut(s);
        f(CUmemorytype::CU_MEMORYTYPE_UNIFIED, ptr)
    }
}

// SAFETY: the `len()` elements that `RawShadow::new`'s caller vouched for (readable and
// writable), in the declared kind; host memory is finished with before returning, as for `[T]`.
unsafe impl<T: crate::element::Differentiable> Linear for RawShadow<T> {
    fn with_addr(&self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        let addr = self.as_ptr() as u64;
        match self.kind() {
            MemoryKind::Host | MemoryKind::Pinned => host_then_wait(s, addr, f),
            MemoryKind::Device => f(CUmemorytype::CU_MEMORYTYPE_DEVICE, addr),
            MemoryKind::Unified => f(CUmemorytype::CU_MEMORYTYPE_UNIFIED, addr),
            // Not linear memory: no address to give the copy.
            _ => Err(invalid_value()),
        }
    }
    fn with_addr_mut(&mut self, s: &CudaStream, f: AddrFn<'_>) -> DriverResult {
        self.with_addr(s, f)
    }
}

/// `dst[origin ..][box] ← src[box]`: linear rows (`pitch` bytes apart, slices `rows` rows apart)
/// into a box of an array, on `stream`, ordered after the array's earlier work on any stream and
/// recorded for its later work. Both boxes are checked first (`CUDA_ERROR_INVALID_VALUE`, as a
/// primal error), and the array's context against the stream's (`Error::ContextMismatch`),
/// before any driver call; an empty box makes none.
pub fn linear_to_array<T: ArrayElement, L: Linear<Elem = T> + ?Sized>(
    stream: &CudaStream,
    dst: &mut CudaArray<T>,
    origin: (usize, usize, usize),
    src: &L,
    (pitch, rows): (usize, usize),
    shape: (usize, usize, usize),
) -> Result<()> {
    array_box_fits(dst.extent(), origin, shape).map_err(Error::primal)?;
    linear_box_fits::<T>(src.len(), pitch, rows, shape).map_err(Error::primal)?;
    if is_empty(shape) {
        return Ok(());
    }
    let a = End::Array(dst.cu_array(), origin, size_of::<T>());
    let linear = src.context().cloned();
    ordered(stream, &[&dst.array_ref()], linear.as_ref(), &mut || {
        src.with_addr(stream, &mut |t, addr| {
            // SAFETY: both boxes were checked above, against the array and against the `len()`
            // elements at `addr` (`Linear`'s contract); the box is not empty, so the origin is
            // inside the array and its byte offset does not overflow.
            unsafe {
                memcpy3d(
                    stream,
                    a,
                    End::Linear(t, addr, pitch, rows),
                    size_of::<T>(),
                    shape,
                )
            }
        })
    })
}

/// `dst[box] ← src[origin ..][box]`: a box of an array into linear rows (written through
/// `&mut`, with the buffer's write tracking), as [`linear_to_array`].
pub fn array_to_linear<T: ArrayElement, L: Linear<Elem = T> + ?Sized>(
    stream: &CudaStream,
    dst: &mut L,
    (pitch, rows): (usize, usize),
    src: &CudaArray<T>,
    origin: (usize, usize, usize),
    shape: (usize, usize, usize),
) -> Result<()> {
    array_box_fits(src.extent(), origin, shape).map_err(Error::primal)?;
    linear_box_fits::<T>(dst.len(), pitch, rows, shape).map_err(Error::primal)?;
    if is_empty(shape) {
        return Ok(());
    }
    let a = End::Array(src.cu_array(), origin, size_of::<T>());
    let linear = dst.context().cloned();
    ordered(stream, &[&src.array_ref()], linear.as_ref(), &mut || {
        dst.with_addr_mut(stream, &mut |t, addr| {
            // SAFETY: as in `linear_to_array`, the linear end written.
            unsafe {
                memcpy3d(
                    stream,
                    End::Linear(t, addr, pitch, rows),
                    a,
                    size_of::<T>(),
                    shape,
                )
            }
        })
    })
}

/// A box of one array into a box of another, as [`linear_to_array`] (the two arrays are
/// distinct: `&mut` and `&`).
pub fn array_to_array<T: ArrayElement>(
    stream: &CudaStream,
    dst: &mut CudaArray<T>,
    dst_origin: (usize, usize, usize),
    src: &CudaArray<T>,
    src_origin: (usize, usize, usize),
    shape: (usize, usize, usize),
) -> Result<()> {
    array_box_fits(dst.extent(), dst_origin, shape).map_err(Error::primal)?;
    array_box_fits(src.extent(), src_origin, shape).map_err(Error::primal)?;
    if is_empty(shape) {
        return Ok(());
    }
    let size = size_of::<T>();
    let d = End::Array(dst.cu_array(), dst_origin, size);
    let s = End::Array(src.cu_array(), src_origin, size);
    ordered(
        stream,
        &[&dst.array_ref(), &src.array_ref()],
        None,
        &mut || {
            // SAFETY: both boxes were checked above against their arrays, and are not empty.
            unsafe { memcpy3d(stream, d, s, size, shape) }
        },
    )
}

/// Whether a box holds no element (the driver is then not called: an empty box fits at any
/// origin, where the descriptor's byte offsets could overflow).
fn is_empty((w, h, d): (usize, usize, usize)) -> bool {
    w == 0 || h == 0 || d == 0
}

/// `copy` enqueued on `stream`, with the stream's context current, after every array's earlier
/// work, and recorded as each array's latest. The arrays, and the linear buffer where it has a
/// context (`linear`), must be of the stream's context: cudarc's guards and the arrays' events
/// record on the stream, which the driver refuses across contexts, and an unrecorded copy would
/// be unordered. A capturing stream is refused (`Error::Capturing`): the events recorded during a
/// capture do not mark the copy, which runs later, when the graph is launched. If a record fails
/// after the copy was enqueued, the stream is waited for before the error returns, so that no
/// array can be dropped while the copy still runs.
fn ordered(
    stream: &CudaStream,
    arrays: &[&ArrayRef<'_>],
    linear: Option<&Arc<CudaContext>>,
    copy: &mut dyn FnMut() -> DriverResult,
) -> Result<()> {
    let here = stream.context();
    let foreign = |what: &str, c: &Arc<CudaContext>| {
        (c.cu_ctx() != here.cu_ctx()).then(|| Error::ContextMismatch {
            what: what.to_string(),
            expected: here.ordinal(),
            found: c.ordinal(),
        })
    };
    for a in arrays {
        if let Some(e) = foreign("the CUDA array", a.ctx) {
            return Err(e);
        }
    }
    if let Some(e) = linear.and_then(|c| foreign("the linear buffer", c)) {
        return Err(e);
    }
    if crate::driver::capturing(stream)? {
        return Err(Error::Capturing {
            op: "a box copy with a CUDA array",
        });
    }
    for a in arrays {
        a.wait(stream)?;
    }
    let copied = {
        let _current = CurrentContext::save();
        stream.context().bind_to_thread().map_err(Error::primal)?;
        copy()
    };
    for a in arrays {
        if let Err(e) = a.record(stream) {
            let _ = stream.synchronize();
            return Err(e);
        }
    }
    copied.map_err(Error::primal)
}
