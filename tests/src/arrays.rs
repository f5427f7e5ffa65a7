//! Copy primitives between CUDA arrays and linear memory: the runtime's ready-made ones
//! (`rules_runtime::array_rules`, re-exported here), and more written as a user writes them: the
//! raw driver's `cuMemcpy3DAsync` with [`CudaArray::cu_array`], annotated with
//! `#[derivative_rule(copy2d / copy3d / copy)]`. The array side's box is placed by its origin
//! (`#[dst_x]`, `#[dst_y]`, `#[dst_z]`, or the source's), in elements; its layout is the array's.
//!
//! The linear side is any [`Linear`] buffer: pageable host slices, cudarc device buffers, pinned
//! host buffers (`alloc_pinned`), unified buffers (`alloc_unified`), and raw pointers of any
//! declared kind ([`RawShadow`](rules_runtime::memory::raw::RawShadow)).
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

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::derivative_rule;
use rules_runtime::memory::array::{ArrayElement, CudaArray};
use std::sync::Arc;

pub use rules_runtime::array_rules::{
    array_to_array, array_to_array_rule, download_array, download_array_rule, from_array,
    from_array_rule, to_array, to_array_rule, upload_array, upload_array_rule,
};
pub use rules_runtime::memory::linear::{
    End, Linear, array_box_fits, invalid_value, linear_box_fits, memcpy3d, whole_array,
};

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
    src.with_addr(stream, &mut |t, addr| {
        let s = End::Linear(t, addr, src_pitch, height);
        // SAFETY: as in `to_array`.
        unsafe { memcpy3d(stream, a, s, size_of::<T>(), (width, height, 1)) }
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
) -> rules_runtime::Result<()> {
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
    src.with_addr(stream, &mut |t, addr| {
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
