//! Launches and driver calls on boxes of device-reachable memory (the region kernels of
//! `shadow.cu`, and `cuMemcpy3DAsync` for staging a box through linear memory). Every function
//! binds the stream's context first.
//!
//! The deterministic sum of a box (its kernels, partials, target and launch shape) is in `sum`;
//! the launch shapes of the other kernels are here.

mod boxes;
mod sum;

pub(crate) use boxes::accumulate;
pub(crate) use boxes::{
    BoxInto, BoxOf, Pass, accumulate_and_zero, array_pass, array_pass_read, can_pass, copy, double,
    fill, sum_into, sum_to_host, with_box_on_host, zero_array,
};
use sum::{SumTo, sum};
pub(crate) use sum::{dtype_index, sum_partials};

use super::kernels::{self, THREADS, bind, real_kernel};
use super::kernels::{FUSED_SPLIT_BYTES, STREAMING_ZERO_BYTES};
use crate::driver::driver;
use crate::driver::pool;
use crate::element::Dtype;
use crate::error::Result;
use cudarc::driver::{CudaStream, sys};

/// One side of a box in device-reachable memory: the byte address of its first element and its
/// strides in elements.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Side {
    pub(crate) addr: u64,
    pub(crate) row: u64,
    pub(crate) slice: u64,
}

/// The box's shape in elements: width, height, depth.
pub(crate) type Shape = (u64, u64, u64);

/// The kernels' `Walk` (shadow.cu): the box shape and the threads per row, as log2; for the
/// sum's vector path (`vec` = 1), the reals of every row before its first 16-byte boundary.
#[repr(C)]
#[derive(Clone, Copy)]
struct Walk {
    width: u64,
    height: u64,
    depth: u64,
    tpr_log2: u32,
    head: u32,
    vec: u32,
}

/// Blocks at most in one region launch. Every kernel strides over what its grid does not cover.
const MAX_BLOCKS: u64 = 1 << 16;
/// Blocks at most in one reduction (so partial sums at most): few enough that the partials cost
/// nothing, enough to fill any GPU several times over.
const SUM_BLOCKS: u64 = 1 << 11;

/// The launch shape for a box of `(w, h, d)` launch units: a power-of-two number of threads per
/// row (up to a block), row groups over grid.x, column chunks over grid.y, each thread taking
/// `passes` columns of a row, and at most `cap` blocks. Where the rows are narrow (a thread has
/// at most one column of each), the kernel takes `batch` rows per thread at a time (its
/// `PASS_ROWS`, `SUM_NARROW_ROWS`: 1 for kernels without narrow batches), and grid.x counts
/// batches. It depends on the box only, never on the device: the sum's order of additions
/// follows from it.
fn walk_with((w, h, d): Shape, passes: u64, cap: u64, batch: u64) -> (Walk, u32, u32) {
    // Narrow rows: the next power of two (a 3-wide row takes 4 threads). Wider rows: about a
    // quarter of the row per thread group, so that the last pass over a row leaves few threads
    // idle (333 columns take 64 threads, six passes, not 256 threads and two).
    let tpr = if w < 128 {
        w.next_power_of_two()
    } else {
        (1u64 << (w / 4).ilog2()).clamp(32, u64::from(THREADS))
    };
    let rows_per_block = u64::from(THREADS) / tpr;
    let gy = w.div_ceil(tpr * passes).clamp(1, 65535.min(cap));
    let batch = if gy * tpr >= w { batch } else { 1 };
    let gx = (h * d)
        .div_ceil(rows_per_block * batch)
        .clamp(1, (cap / gy).max(1));
    let walk = Walk {
        width: w,
        height: h,
        depth: d,
        tpr_log2: tpr.trailing_zeros(),
        head: 0,
        vec: 0,
    };
    (walk, gx as u32, gy as u32)
}

/// The shape of the fill kernels: four columns per thread, up to [`MAX_BLOCKS`].
fn walk(shape: Shape) -> (Walk, u32, u32) {
    walk_with(shape, 4, MAX_BLOCKS, 1)
}

/// Narrow rows each thread of `region_accumulate_*` (elements) and `region_accumulate_v_*`
/// (16-byte vectors) takes at a time: `PASS_ROWS` and `PASS_ROWS_V` in `shadow.cu`.
const PASS_ROWS: u64 = 4;
const PASS_ROWS_V: u64 = 4;

/// Whether a side's box is one run of elements: its rows follow each other without padding, and
/// so do its slices.
fn packed(side: &Side, (w, h, d): Shape) -> bool {
    h * d == 1 || (side.row == w && (d == 1 || side.slice == w * h))
}

/// Launches `f` with `params` on `stream` over the grid of `walk`.
///
/// # Safety
/// `params` must match `f`'s parameters, and what they address be valid on `stream`.
unsafe fn launch(
    stream: &CudaStream,
    f: sys::CUfunction,
    grid: (u32, u32),
    params: &mut [*mut core::ffi::c_void],
    what: &'static str,
) -> Result<()> {
    bind(stream)?;
    // SAFETY: by the caller's contract; the driver copies the parameters before returning.
    unsafe {
        cudarc::driver::result::launch_kernel(
            f,
            (grid.0, grid.1, 1),
            (THREADS, 1, 1),
            0,
            stream.cu_stream(),
            params,
        )
    }
    .map_err(driver(what))
}

fn empty((w, h, d): Shape) -> bool {
    w == 0 || h == 0 || d == 0
}

/// `acc[box] += src[box]` (and `src[box] ← 0` when `zero_src`) for elements of `dtype`, on
/// `stream`: one launch, 16-byte vectors when both sides allow them.
///
/// # Safety
/// Both boxes must be valid device-reachable memory ordered on `stream`, and disjoint or the same
/// box (each element is read before it is written by the same thread).
unsafe fn launch_accumulate(
    stream: &CudaStream,
    dtype: Dtype,
    acc: Side,
    src: Side,
    shape: Shape,
    zero_src: bool,
) -> Result<()> {
    if empty(shape) {
        return Ok(());
    }
    if packed(&acc, shape) && packed(&src, shape) {
        // One run of elements on each side: the whole-buffer kernels, which are level with
        // PyTorch's, and above FUSED_SPLIT_BYTES the same split as the whole-buffer reverse.
        let n = (shape.0 * shape.1 * shape.2) as usize;
        let bytes = n * dtype.size();
        // SAFETY: both runs hold `n` elements (the boxes, packed), valid on `stream` by the
        // caller's contract; disjoint, or the same box without `zero_src` (the caller returns
        // early for the same box with it).
        return unsafe {
            if zero_src && bytes >= FUSED_SPLIT_BYTES {
                kernels::launch_accumulate(stream, dtype, acc.addr, src.addr, n, false)?;
                if bytes >= STREAMING_ZERO_BYTES {
                    kernels::zero_streaming(stream, src.addr, bytes)
                } else {
                    kernels::memset_zero(stream, src.addr, bytes)
                }
            } else {
                kernels::launch_accumulate(stream, dtype, acc.addr, src.addr, n, zero_src)
            }
        };
    }
    let loaded = pool::kernels(stream.context())?;
    let (index, reals) = real_kernel(dtype);
    let real = (dtype.size() as u64) / reals;
    // In reals: a complex element is `reals` consecutive reals.
    let (w, h, d) = (shape.0 * reals, shape.1, shape.2);
    let (mut a, mut s) = (acc, src);
    for side in [&mut a, &mut s] {
        side.row *= reals;
        side.slice *= reals;
    }
    let per_vector = 16 / real;
    let aligned = |x: u64| x.is_multiple_of(16);
    let vec = [a.addr, s.addr].iter().all(|&p| aligned(p))
        && [a.row, a.slice, s.row, s.slice, w]
            .iter()
            .all(|&x| aligned(x * real) || x == 0)
        && (h * d == 1 || (aligned(a.row * real) && aligned(s.row * real)));
    let (f, unit) = if vec {
        (loaded.region[1][index], per_vector)
    } else {
        (loaded.region[0][index], 1)
    };
    let batch = if vec { PASS_ROWS_V } else { PASS_ROWS };
    let (mut walk, gx, gy) = walk_with((w / unit, h, d), 4, MAX_BLOCKS, batch);
    let (mut pa, mut ar, mut asl) = (a.addr, a.row / unit, a.slice / unit);
    let (mut ps, mut sr, mut ssl) = (s.addr, s.row / unit, s.slice / unit);
    let mut zero = u32::from(zero_src);
    let mut params: [*mut core::ffi::c_void; 8] = [
        (&raw mut pa).cast(),
        (&raw mut ar).cast(),
        (&raw mut asl).cast(),
        (&raw mut ps).cast(),
        (&raw mut sr).cast(),
        (&raw mut ssl).cast(),
        (&raw mut walk).cast(),
        (&raw mut zero).cast(),
    ];
    // SAFETY: the parameters match `region_accumulate*` (void*, u64, u64, void*, u64, u64, Walk,
    // unsigned); the boxes are valid by the caller's contract.
    unsafe {
        launch(
            stream,
            f,
            (gx, gy),
            &mut params,
            "cuLaunchKernel (region accumulate)",
        )
    }
}

/// `dst[box] ← value` for elements of `size` bytes (2, 4, 8 or 16), `value` being the element's
/// bytes; 16-byte stores when the box allows them.
///
/// # Safety
/// The box must be valid device-reachable memory ordered on `stream`.
unsafe fn launch_fill(
    stream: &CudaStream,
    dst: Side,
    shape: Shape,
    size: usize,
    value: &[u8],
) -> Result<()> {
    if empty(shape) {
        return Ok(());
    }
    let loaded = pool::kernels(stream.context())?;
    let size = size as u64;
    let (w, h, d) = shape;
    let aligned = |x: u64| x.is_multiple_of(16);
    let vec = aligned(dst.addr)
        && aligned(w * size)
        && (h * d == 1 || aligned(dst.row * size))
        && (d == 1 || aligned(dst.slice * size));
    // The value repeated over 16 bytes, for the vector launch (and as the scalar's low bytes).
    let mut pattern = [0u8; 16];
    for (i, b) in pattern.iter_mut().enumerate() {
        *b = value[i % value.len()];
    }
    let (f, unit) = if vec {
        (loaded.fill[3], 16 / size)
    } else {
        let i = by_size(size);
        (loaded.fill[i], 1)
    };
    let (mut walk, gx, gy) = walk((w / unit, h, d));
    let (mut p, mut r, mut sl) = (dst.addr, dst.row / unit, dst.slice / unit);
    let mut lo = u64::from_le_bytes(pattern[..8].try_into().expect("8 bytes"));
    let mut hi = u64::from_le_bytes(pattern[8..].try_into().expect("8 bytes"));
    let mut params: [*mut core::ffi::c_void; 6] = [
        (&raw mut p).cast(),
        (&raw mut r).cast(),
        (&raw mut sl).cast(),
        (&raw mut walk).cast(),
        (&raw mut lo).cast(),
        (&raw mut hi).cast(),
    ];
    // SAFETY: the parameters match `region_fill_b*` (P*, u64, u64, Walk, u64, u64); the box is
    // valid by the caller's contract.
    unsafe {
        launch(
            stream,
            f,
            (gx, gy),
            &mut params,
            "cuLaunchKernel (region fill)",
        )
    }
}

/// The index of the kernel for elements of `size` bytes among those suffixed `_b2`, `_b4`, `_b8`,
/// `_b16` (`region_fill_b*`, `surface_zero_b*`).
fn by_size(size: u64) -> usize {
    match size {
        2 => 0,
        4 => 1,
        8 => 2,
        _ => 3,
    }
}

/// Where one side of a box copy is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum At {
    /// Memory the host reaches only by itself (pageable, or pinned used from the host).
    Host(u64),
    /// A unified-address-space pointer the driver classifies (device, managed, pinned).
    Unified(u64),
    /// A CUDA array, from element `(x, y, z)`; the side's strides are ignored.
    Array {
        handle: sys::CUarray,
        x: usize,
        y: usize,
        z: usize,
    },
}

/// Copies a box of `shape` elements of `size` bytes from `src` (strides in elements) into `dst`,
/// with `cuMemcpy3DAsync` on `stream`.
///
/// # Safety
/// Both boxes valid for the copy; a pageable host side is read or written before the call
/// returns, a pinned one when the stream reaches the copy.
pub(crate) unsafe fn copy_box(
    stream: &CudaStream,
    size: usize,
    (dst, dst_row, dst_slice): (At, u64, u64),
    (src, src_row, src_slice): (At, u64, u64),
    shape: Shape,
) -> Result<()> {
    if empty(shape) {
        return Ok(());
    }
    let size = size as u64;
    let (w, h, d) = shape;
    let height = |row: u64, slice: u64| slice.checked_div(row).unwrap_or(h).max(h) as usize;
    let pitch = |row: u64| (row.max(w) * size) as usize;
    // (memory type, host pointer, device pointer, array, x in bytes, y, z) of one side.
    let place = |at: At| match at {
        At::Host(p) => (
            sys::CUmemorytype::CU_MEMORYTYPE_HOST,
            p,
            0,
            core::ptr::null_mut(),
            0,
            0,
            0,
        ),
        At::Unified(p) => (
            sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED,
            0,
            p,
            core::ptr::null_mut(),
            0,
            0,
            0,
        ),
        At::Array { handle, x, y, z } => (
            sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
            0,
            0,
            handle,
            x * size as usize,
            y,
            z,
        ),
    };
    let (src_type, src_host, src_device, src_array, src_x, src_y, src_z) = place(src);
    let (dst_type, dst_host, dst_device, dst_array, dst_x, dst_y, dst_z) = place(dst);
    // Every field written out: the memory-type enum has no zero value, so the struct has no
    // all-zero default.
    let c = sys::CUDA_MEMCPY3D {
        srcXInBytes: src_x,
        srcY: src_y,
        srcZ: src_z,
        srcLOD: 0,
        srcMemoryType: src_type,
        srcHost: src_host as *const core::ffi::c_void,
        srcDevice: src_device,
        srcArray: src_array,
        reserved0: core::ptr::null_mut(),
        srcPitch: pitch(src_row),
        srcHeight: height(src_row, src_slice),
        dstXInBytes: dst_x,
        dstY: dst_y,
        dstZ: dst_z,
        dstLOD: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host as *mut core::ffi::c_void,
        dstDevice: dst_device,
        dstArray: dst_array,
        reserved1: core::ptr::null_mut(),
        dstPitch: pitch(dst_row),
        dstHeight: height(dst_row, dst_slice),
        WidthInBytes: (w * size) as usize,
        Height: h as usize,
        Depth: d as usize,
    };
    bind(stream)?;
    // SAFETY: `c` describes two valid boxes by the caller's contract.
    unsafe { sys::cuMemcpy3DAsync_v2(&c, stream.cu_stream()) }
        .result()
        .map_err(driver("cuMemcpy3DAsync (region staging)"))
}

/// Elements per thread of the `array_pass_*` kernels: `ARRAY_PASS_ELEMS` in `shadow.cu`.
const PASS_ELEMS: u64 = 4;

/// The tile of threads of `array_pass_w_*` (see [`array_box`]).
const WORD_BLOCK: (u64, u64) = (16, 8);

/// Whether the pass over a box of `shape` elements of `size` bytes at element `x` of an array of
/// `dims` dimensions takes `array_pass_w_*` (16-byte words): a 3D array (on 2D arrays words were
/// level or slower: docs/performance.md, issue 23, third round), a box of several rows, the array
/// box starting on a 16-byte boundary along x and the linear box's start and strides multiples
/// of 16 bytes, so that every word lies in both boxes at 16-byte aligned addresses; elements of
/// 16 bytes are words already.
fn pass_words(size: u64, dims: u32, x: u64, lin: Side, (_, h, d): Shape) -> bool {
    let aligned = |v: u64| v.is_multiple_of(16);
    size < 16
        && dims == 3
        && h > 1
        && aligned(x * size)
        && aligned(lin.addr)
        && aligned(lin.row * size)
        && (d == 1 || aligned(lin.slice * size))
}

/// Where a box of a CUDA array is, for [`array_box`]: the array's surface object, the
/// array's dimensionality (1, 2 or 3: the surface store's geometry must match it), and the box's
/// first element.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SurfaceBox {
    pub(crate) surface: sys::CUsurfObject,
    pub(crate) dims: u32,
    pub(crate) x: usize,
    pub(crate) y: usize,
    pub(crate) z: usize,
}

/// What a surface kernel does to a box of a CUDA array.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SurfaceOp {
    /// `array[box] ← 0` (`surface_zero_b*`).
    Zero,
    /// One of the reverses with the box `lin` of device memory (`array_pass_*`, `mode` as in
    /// `shadow.cu`): 0 `lin += array`, 1 and `array ← 0`, 2 `array += lin`, 3 and `lin ← 0`.
    Pass { dtype: Dtype, lin: Side, mode: u32 },
}

/// Runs `op` on a box of `shape` elements of `size` bytes (2, 4, 8 or 16) of a CUDA array, through
/// its surface, on `stream`.
///
/// # Safety
/// `b.surface` is a live surface object of the array on `stream`'s context, `b.dims` the array's
/// dimensionality, and the box lies inside the array, its far corner (in bytes along x) within
/// `i32`; for `Pass`, `lin` is a box of `shape` elements of `dtype` in device memory ordered on
/// `stream`, not overlapping anything else the call touches.
unsafe fn array_box(
    stream: &CudaStream,
    b: SurfaceBox,
    size: usize,
    shape: Shape,
    op: SurfaceOp,
) -> Result<()> {
    if empty(shape) {
        return Ok(());
    }
    let loaded = pool::kernels(stream.context())?;
    let words = match op {
        SurfaceOp::Pass { lin, .. } => pass_words(size as u64, b.dims, b.x as u64, lin, shape),
        SurfaceOp::Zero => false,
    };
    let f = match op {
        SurfaceOp::Zero => loaded.surface_zero[by_size(size as u64)],
        SurfaceOp::Pass { dtype, .. } => loaded.array_pass[usize::from(words)][dtype_index(dtype)],
    };
    let (w, h, d) = shape;
    // Rows of a 1D array take whole blocks. Boxes of 2D and 3D arrays: the zeroing kernel takes
    // 16 × 16 tiles (the faster shape for 16-byte elements, the same for 4-byte ones:
    // docs/arrays.md); the element pass kernels 64 × 4 tiles of threads, each thread four
    // elements a tile's height apart: 256-byte runs of the linear box per row, where 16-wide
    // tiles made 64-byte runs and were slower (docs/performance.md, issue 23). The word kernels
    // take 16 × 8 tiles of four words a tile's height apart: 256-byte runs again, a warp on two
    // rows (the fastest of seven shapes; those 16 words wide were within 2% of it, those 32 or 64
    // words wide 15-20% slower: docs/performance.md, issue 23, third round).
    let block = match op {
        _ if h == 1 => (256, 1),
        SurfaceOp::Zero => (16, 16),
        SurfaceOp::Pass { .. } if words => WORD_BLOCK,
        SurfaceOp::Pass { .. } => (64, 4),
    };
    // Threads per row: one per element, or per 16-byte word and per element left over.
    let units = if words {
        let per_word = 16 / size as u64;
        w / per_word + w % per_word
    } else {
        w
    };
    // The kernel's coordinates are 32-bit: the caller checked that the box's fit.
    let int = |v: u64| v as core::ffi::c_int;
    let (mut surface, mut dims) = (b.surface, b.dims);
    let (mut x, mut y) = (int(b.x as u64), int(b.y as u64));
    let (mut bw, mut bh) = (int(w), int(h));
    bind(stream)?;
    // grid.z is at most 65535: deeper boxes go in slabs.
    let mut z = 0;
    while z < d {
        let slab = (d - z).min(65535);
        let mut z0 = int(b.z as u64 + z);
        let (mut lin, mut row, mut slice, mut mode) = match op {
            SurfaceOp::Zero => (0, 0, 0, 0),
            SurfaceOp::Pass { lin, mode, .. } => (
                lin.addr + z * lin.slice * size as u64,
                lin.row,
                lin.slice,
                mode,
            ),
        };
        let mut params: [*mut core::ffi::c_void; 11] = [
            (&raw mut surface).cast(),
            (&raw mut dims).cast(),
            (&raw mut x).cast(),
            (&raw mut y).cast(),
            (&raw mut z0).cast(),
            (&raw mut bw).cast(),
            (&raw mut bh).cast(),
            (&raw mut lin).cast(),
            (&raw mut row).cast(),
            (&raw mut slice).cast(),
            (&raw mut mode).cast(),
        ];
        let used = match op {
            SurfaceOp::Zero => 7,
            SurfaceOp::Pass { .. } => 11,
        };
        // A pass kernel takes PASS_ELEMS elements per thread, a block's height apart (a block's
        // width for 1D arrays).
        let (ex, ey) = match op {
            SurfaceOp::Zero => (1, 1),
            SurfaceOp::Pass { .. } if h == 1 => (PASS_ELEMS, 1),
            SurfaceOp::Pass { .. } => (1, PASS_ELEMS),
        };
        let grid = (
            units.div_ceil(block.0 * ex) as u32,
            h.div_ceil(block.1 * ey) as u32,
            slab as u32,
        );
        // SAFETY: `params` matches the kernel (`surface_zero_b*`: u64, u32, i32 × 5;
        // `array_pass_*`: those, then a pointer, u64, u64, u32) and outlives the call; the boxes
        // are valid by the caller's contract.
        unsafe {
            cudarc::driver::result::launch_kernel(
                f,
                grid,
                (block.0 as u32, block.1 as u32, 1),
                0,
                stream.cu_stream(),
                &mut params[..used],
            )
        }
        .map_err(driver("cuLaunchKernel (surface kernel)"))?;
        z += slab;
    }
    Ok(())
}
