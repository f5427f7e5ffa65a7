//! The deterministic sum of a box of device-reachable memory: one reduction kernel writes a
//! partial sum per block in `f64` (one per component); a second, of one block, folds the partials
//! into `f64` results or adds them into an element. The blocks follow from the box only
//! (`walk_sum`), never from the device, so the order of additions does too.

use super::{Shape, Side, empty, launch, walk_sum};
use crate::device::pool;
use crate::element::Dtype;
use crate::error::Result;
use cudarc::driver::CudaStream;

/// The sum kernels, in the order they are loaded.
pub(crate) const SUMS: [&str; 6] = ["f32", "f64", "f16", "bf16", "c32", "c64"];

/// The index of `dtype`'s kernel among those named like [`SUMS`].
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
pub(crate) fn sum_partials(dtype: Dtype, shape: Shape) -> usize {
    let (_, gx, gy) = walk_sum(shape);
    (gx as usize) * (gy as usize) * components(dtype)
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
/// memory of [`sum_partials`] doubles), written or added where `to` says.
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
    let (mut walk_, gx, gy) = walk_sum(shape);
    let mut blocks = u64::from(gx) * u64::from(gy);
    let (mut p, mut r, mut sl, mut part) = (src.addr, src.row, src.slice, partials);
    if !empty(shape) {
        let mut params: [*mut core::ffi::c_void; 5] = [
            (&raw mut p).cast(),
            (&raw mut r).cast(),
            (&raw mut sl).cast(),
            (&raw mut walk_).cast(),
            (&raw mut part).cast(),
        ];
        // SAFETY: the parameters match `region_sum_*` (const S*, u64, u64, Walk, double*).
        unsafe {
            launch(
                stream,
                loaded.sum[index],
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
