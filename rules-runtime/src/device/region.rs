//! Launches and driver calls on boxes of device-reachable memory (the region kernels of
//! `shadow.cu`, and `cuMemcpy3DAsync` for staging a box through linear memory). Every function
//! binds the stream's context first.
//!
//! The deterministic sum of a box (its kernels, partials, target and launch shape) is in `sum`;
//! the box copy through the driver in `copy`; the surface kernels on CUDA arrays in `surface`;
//! the launch shapes of the other kernels are here.

mod boxes;
mod copy;
mod sum;
mod surface;

pub(crate) use boxes::accumulate;
pub(crate) use boxes::{
    BoxInto, BoxOf, Pass, accumulate_and_zero, array_pass, array_pass_read, can_pass, copy, double,
    fill, sum_into, sum_to_host, with_box_on_host, zero_array,
};
pub(crate) use copy::{At, copy_box};
use sum::{SumTo, sum};
pub(crate) use sum::{dtype_index, sum_partials};
pub(crate) use surface::{SurfaceBox, SurfaceOp, array_box};

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
