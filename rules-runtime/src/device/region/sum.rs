//! The deterministic sum of a box of device-reachable memory: one reduction kernel writes a
//! partial sum per block in `f64` (one per component); a second, of one block, folds the partials
//! into `f64` results or adds them into an element. The blocks follow from the box and the
//! alignment of its rows only ([`plan`]), never from the device, so the order of additions does
//! too.

use super::{SUM_BLOCKS, Shape, Side, Walk, empty, launch, packed, walk_with};
use crate::driver::pool;
use crate::element::Dtype;
use crate::error::Result;
use cudarc::driver::CudaStream;

/// The index of `dtype`'s kernel among those named like
/// [`SUMS`](crate::driver::pool::modules::SUMS).
pub(crate) fn dtype_index(dtype: Dtype) -> usize {
    match dtype {
        Dtype::F32 => 0,
        Dtype::F64 => 1,
        Dtype::F16 => 2,
        Dtype::Bf16 => 3,
        Dtype::C32 => 4,
        Dtype::C64 => 5,
    }
}

/// How many partial sums (`f64`, one per component) the reduction of a box writes.
pub(crate) fn sum_partials(dtype: Dtype, src: Side, shape: Shape) -> usize {
    let p = plan(dtype, src, shape);
    (p.gx as usize) * (p.gy as usize) * components(dtype)
}

/// Rows of fewer bytes than this (128 vectors) take the scalar paths even where their starts
/// allow vectors: the vector path takes one row at a time, the scalar one batches narrow rows.
const VEC_MIN_ROW_BYTES: u64 = 2048;
/// Columns (of 16-byte vectors, on the vector path; of elements otherwise) each thread should
/// take before a box needs more than one block per row group, up to [`SUM_BLOCKS`] blocks.
const VEC_PASSES: u64 = 4;
const SCALAR_PASSES: u64 = 16;
/// Narrow rows each thread of `region_sum_narrow_*` takes at a time, by the bytes of one element:
/// `SUM_NARROW_ROWS_2`, `_4`, `_8`, `_16` in `shadow.cu`; half as many for boxes of several
/// slices.
fn narrow_rows(dtype: Dtype, depth: u64) -> u64 {
    let rows = match dtype.size() {
        2 => 24,
        4 => 16,
        8 => 8,
        _ => 4,
    };
    if depth > 1 { rows / 2 } else { rows }
}

/// The launch of a reduction: the kernel's walk, its grid, the strides (in elements) it walks
/// the box with, and whether the rows are narrow (`region_sum_narrow_*`).
pub(crate) struct Plan {
    walk: Walk,
    gx: u32,
    gy: u32,
    row: u64,
    slice: u64,
    narrow: bool,
}

/// How the reduction walks `src[shape]`: a packed box as one row; rows whose starts share their
/// alignment modulo 16 bytes, and that hold a few 16-byte vectors, as head, vectors, tail (the
/// vector path of `region_sum_*`); narrow rows (one column per thread) by `region_sum_narrow_*`;
/// other boxes element by element. It depends on the box and the address of its first element
/// modulo 16 only, so the order of additions does too.
pub(crate) fn plan(dtype: Dtype, src: Side, shape: Shape) -> Plan {
    let (mut w, mut h, mut d) = shape;
    let (mut row, mut slice) = (src.row, src.slice);
    if packed(&src, shape) {
        (w, h, d) = (w * h * d, 1, 1);
        (row, slice) = (w, w);
    }
    let size = dtype.size() as u64;
    let comps = components(dtype) as u64;
    let real = size / comps;
    let per_vector = 16 / real;
    let head = ((16 - src.addr % 16) % 16) / real;
    let reals = w * comps;
    let aligned = |x: u64| (x * size).is_multiple_of(16);
    let vec = src.addr.is_multiple_of(real)
        && (h * d == 1 || aligned(row))
        && (d == 1 || aligned(slice))
        && reals * real >= VEC_MIN_ROW_BYTES
        && reals >= head + per_vector;
    let (walk, gx, gy) = if vec {
        let vectors = (reals - head) / per_vector;
        let (mut walk, gx, gy) = walk_with((vectors, h, d), VEC_PASSES, SUM_BLOCKS, 1);
        walk.width = w;
        walk.head = head as u32;
        walk.vec = 1;
        (walk, gx, gy)
    } else {
        walk_with((w, h, d), SCALAR_PASSES, SUM_BLOCKS, narrow_rows(dtype, d))
    };
    // The kernels' own test: at most one column of each row per thread.
    let narrow = !vec && u64::from(gy) << walk.tpr_log2 >= w;
    Plan {
        walk,
        gx,
        gy,
        row,
        slice,
        narrow,
    }
}

/// Real components of one element: 2 for complex.
pub(crate) fn components(dtype: Dtype) -> usize {
    match dtype {
        Dtype::C32 | Dtype::C64 => 2,
        _ => 1,
    }
}

/// Where the deterministic sum of a box goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SumTo {
    /// `components` doubles at this device-reachable address.
    F64(u64),
    /// Added (rounded once) into the element at this device address.
    AddInto(u64),
}

/// The deterministic sum of `src[box]`, in `f64` per component, through `partials` (device
/// memory of [`sum_partials`] doubles for the same box), written or added where `to` says.
///
/// # Safety
/// The box, `partials` and the target must be valid device-reachable memory ordered on `stream`.
pub(crate) unsafe fn sum(
    stream: &CudaStream,
    dtype: Dtype,
    src: Side,
    shape: Shape,
    partials: u64,
    to: SumTo,
) -> Result<()> {
    let loaded = pool::kernels(stream.context())?;
    let index = dtype_index(dtype);
    let Plan {
        walk: mut walk_,
        gx,
        gy,
        row,
        slice,
        narrow,
    } = plan(dtype, src, shape);
    let mut blocks = u64::from(gx) * u64::from(gy);
    let (mut p, mut r, mut sl, mut part) = (src.addr, row, slice, partials);
    if !empty(shape) {
        let mut params: [*mut core::ffi::c_void; 5] = [
            (&raw mut p).cast(),
            (&raw mut r).cast(),
            (&raw mut sl).cast(),
            (&raw mut walk_).cast(),
            (&raw mut part).cast(),
        ];
        let f = if narrow {
            loaded.sum_narrow[index]
        } else {
            loaded.sum[index]
        };
        // SAFETY: the parameters match `region_sum_*` and `region_sum_narrow_*` (const S*, u64,
        // u64, Walk, double*).
        unsafe {
            launch(
                stream,
                f,
                (gx, gy),
                &mut params,
                "cuLaunchKernel (region sum)",
            )?
        };
    } else {
        blocks = 0;
    }
    match to {
        SumTo::F64(out) => {
            let mut comps = components(dtype) as u32;
            let mut out = out;
            let mut params: [*mut core::ffi::c_void; 4] = [
                (&raw mut part).cast(),
                (&raw mut blocks).cast(),
                (&raw mut comps).cast(),
                (&raw mut out).cast(),
            ];
            // SAFETY: the parameters match `region_sum_finish` (const double*, u64, unsigned,
            // double*); one block, as the kernel expects.
            unsafe {
                launch(
                    stream,
                    loaded.sum_finish,
                    (1, 1),
                    &mut params,
                    "cuLaunchKernel (region sum finish)",
                )
            }
        }
        SumTo::AddInto(acc) => {
            let mut acc = acc;
            let mut params: [*mut core::ffi::c_void; 3] = [
                (&raw mut part).cast(),
                (&raw mut blocks).cast(),
                (&raw mut acc).cast(),
            ];
            // SAFETY: the parameters match `region_sum_add_*` (const double*, u64, S*); one block.
            unsafe {
                launch(
                    stream,
                    loaded.sum_add[index],
                    (1, 1),
                    &mut params,
                    "cuLaunchKernel (region sum add)",
                )
            }
        }
    }
}
