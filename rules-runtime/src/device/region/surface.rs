//! The surface kernels on boxes of CUDA arrays: zeroing (`surface_zero_*`) and the passes between
//! an array box and a box of device memory (`array_pass_*`).

use super::{Shape, Side, bind, by_size, dtype_index, empty};
use crate::driver::driver;
use crate::driver::pool;
use crate::element::Dtype;
use crate::error::Result;
use cudarc::driver::{CudaStream, sys};

/// Elements per thread of the `array_pass_*` kernels: `ARRAY_PASS_ELEMS` in `shadow.cu`.
const PASS_ELEMS: u64 = 4;

/// The tile of threads of `array_pass_w_*` (see [`array_box`]).
const WORD_BLOCK: (u64, u64) = (16, 8);

/// Whether the pass over a box of `shape` elements of `size` bytes at element `x` of an array of
/// `dims` dimensions takes `array_pass_w_*` (16-byte words): a 3D array (on 2D arrays words were
/// level or slower: docs/performance-notes.md, "CUDA array one-pass reverse"), a box of several rows, the array
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
pub(crate) unsafe fn array_box(
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
    // tiles made 64-byte runs and were slower (docs/performance-notes.md, "CUDA array one-pass reverse"). The word kernels
    // take 16 × 8 tiles of four words a tile's height apart: 256-byte runs again, a warp on two
    // rows (the fastest of seven shapes; those 16 words wide were within 2% of it, those 32 or 64
    // words wide 15-20% slower: docs/performance-notes.md, "CUDA array one-pass reverse").
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
