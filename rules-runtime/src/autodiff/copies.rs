//! Ready-made bridged copies: cudarc's copies and memset, to call directly inside a function
//! differentiated by `std::autodiff`. No rule of your own, no `unsafe`, no driver call:
//!
//! ```ignore
//! #![feature(autodiff)]
//! use rules_runtime::autodiff::{AdBuf, AdPair, copies, take_error};
//! use std::autodiff::autodiff_reverse;
//!
//! #[autodiff_reverse(df, Duplicated, Duplicated, Active)]
//! fn f(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
//!     let mut h = [0.0f32; 3];
//!     copies::memcpy_htod(dev, x);        // host -> device
//!     copies::memcpy_dtoh(&mut h, dev);   // device -> host
//!     h.iter().map(|v| v * v).sum()       // f(x) = sum(abs2, to_host(to_device(x)))
//! }
//!
//! let stream = rules_runtime::cuda::stream(0)?;
//! let (mut a, mut da) = (stream.alloc_zeros::<f32>(3)?, stream.alloc_zeros::<f32>(3)?);
//! let mut pair = AdPair::new(&mut a, &mut da, &stream)?;
//! let (dev, ddev) = pair.split();
//! let mut dx = [0.0f32; 3];
//! df(&[1.0, 2.0, 3.0], &mut dx, dev, ddev, 1.0);
//! assert!(take_error().is_none());
//! assert_eq!(dx, [2.0, 4.0, 6.0]);
//! ```
//!
//! A buffer other than pageable host memory is an [`AdBuf`] handle of an [`AdPair`] made
//! outside the function (device, pinned or unified memory: the kind is the handle's, so one
//! function serves every pair of kinds); pageable host memory is a slice. The work runs on the
//! stream the pairs were made for; pageable memory alone (pairs of `AdPair::new_host`) is copied
//! on the host. Each call runs the rule of its copy: in reverse mode the augmented primal and
//! the reverse (`d_src += d_dst; d_dst = 0` on the copy's stream), in forward mode the forward
//! rule (`d_dst = d_src`); a memset's destination derivative is zeroed. Lengths are checked
//! as cudarc checks them (a copy's two sides are equal), boxes as the rules check them; a call
//! that fails copies nothing and records the error for [`take_error`](super::take_error).
//!
//! Element types: `f32` and `f64`, whose copies carry derivatives, and the integers (`u8` to
//! `i64`), whose copies run in every mode and carry none (an index buffer copied inside a
//! differentiated function: Enzyme would otherwise stop at the driver call). Device memory of
//! integers is the handle of an [`AdData`] (a buffer without a shadow), passed as `Const`;
//! pitched and array copies are for the floats ([`BridgedBoxes`]). The symbols
//! carry this crate's version, so two versions of `rules-runtime` in one program each use their
//! own bridges.
//!
//! CUDA arrays are [`AdArray`] handles of an [`AdArrayPair`] (an array, its shadow array and
//! the stream); their copies are the ready-made [`array_rules`](crate::array_rules), bridged:
//! [`upload_array`], [`download_array`] and the box copies [`copy_to_array`],
//! [`copy_from_array`], [`copy_array_to_array`]. Their linear side is a handle of any kind.

pub use crate::autodiff::raw::{AdData, Bridged, BridgedBoxes, DataBuffer};

#[cfg(doc)]
use super::{AdArray, AdArrayPair, AdBuf, AdPair};

/// `dst ← src` between two handles of any kinds (device ↔ device, pinned ↔ device, unified ...):
/// cudarc's `memcpy_dtod`, `memcpy_htod` from pinned memory, `memcpy_dtoh` into pinned memory.
/// The two have the same length.
pub fn memcpy<T: Bridged>(dst: &super::AdBuf<T>, src: &super::AdBuf<T>) {
    T::__memcpy(dst, src)
}

/// `dst ← src` from pageable host memory (cudarc's `memcpy_htod`); the same length.
pub fn memcpy_htod<T: Bridged>(dst: &super::AdBuf<T>, src: &[T]) {
    T::__memcpy_htod(dst, src)
}

/// `dst ← src` into pageable host memory (cudarc's `memcpy_dtoh`); the same length.
pub fn memcpy_dtoh<T: Bridged>(dst: &mut [T], src: &super::AdBuf<T>) {
    T::__memcpy_dtoh(dst, src)
}

/// `dst ← 0` (cudarc's `memset_zeros`): device or unified memory (pageable memory of a pair
/// made with `AdPair::new_host`, on the host). Its derivative is zeroed too.
pub fn memset_zeros<T: Bridged>(dst: &super::AdBuf<T>) {
    T::__memset_zeros(dst)
}

/// A pitched 2D copy between two handles: `height` rows of `width` elements, rows `dst_pitch`
/// and `src_pitch` bytes apart from each buffer's start (`cuMemcpy2DAsync`). The padding
/// between rows is neither read nor written, nor is its derivative.
pub fn memcpy_2d<T: BridgedBoxes>(
    dst: &super::AdBuf<T>,
    dst_pitch: usize,
    src: &super::AdBuf<T>,
    src_pitch: usize,
    (width, height): (usize, usize),
) {
    T::__memcpy_3d(
        dst,
        (dst_pitch, height),
        src,
        (src_pitch, height),
        (width, height, 1),
    )
}

/// [`memcpy_2d`] from pageable host rows.
pub fn memcpy_2d_htod<T: BridgedBoxes>(
    dst: &super::AdBuf<T>,
    dst_pitch: usize,
    src: &[T],
    src_pitch: usize,
    (width, height): (usize, usize),
) {
    T::__memcpy_3d_htod(
        dst,
        (dst_pitch, height),
        src,
        (src_pitch, height),
        (width, height, 1),
    )
}

/// [`memcpy_2d`] into pageable host rows.
pub fn memcpy_2d_dtoh<T: BridgedBoxes>(
    dst: &mut [T],
    dst_pitch: usize,
    src: &super::AdBuf<T>,
    src_pitch: usize,
    (width, height): (usize, usize),
) {
    T::__memcpy_3d_dtoh(
        dst,
        (dst_pitch, height),
        src,
        (src_pitch, height),
        (width, height, 1),
    )
}

/// A pitched 3D copy between two handles: `depth` slices of `height` rows of `width`
/// elements; each side's rows are `pitch` bytes apart and its slices `rows` rows apart
/// (`(pitch, rows)`), from the buffer's start (`cuMemcpy3DAsync`).
pub fn memcpy_3d<T: BridgedBoxes>(
    dst: &super::AdBuf<T>,
    dst_layout: (usize, usize),
    src: &super::AdBuf<T>,
    src_layout: (usize, usize),
    shape: (usize, usize, usize),
) {
    T::__memcpy_3d(dst, dst_layout, src, src_layout, shape)
}

/// [`memcpy_3d`] from pageable host memory.
pub fn memcpy_3d_htod<T: BridgedBoxes>(
    dst: &super::AdBuf<T>,
    dst_layout: (usize, usize),
    src: &[T],
    src_layout: (usize, usize),
    shape: (usize, usize, usize),
) {
    T::__memcpy_3d_htod(dst, dst_layout, src, src_layout, shape)
}

/// [`memcpy_3d`] into pageable host memory.
pub fn memcpy_3d_dtoh<T: BridgedBoxes>(
    dst: &mut [T],
    dst_layout: (usize, usize),
    src: &super::AdBuf<T>,
    src_layout: (usize, usize),
    shape: (usize, usize, usize),
) {
    T::__memcpy_3d_dtoh(dst, dst_layout, src, src_layout, shape)
}

/// A whole array from packed linear memory (x fastest): [`array_rules::upload_array`](crate::array_rules::upload_array).
pub fn upload_array<T: BridgedBoxes>(dst: &super::AdArray<T>, src: &super::AdBuf<T>) {
    T::__upload_array(dst, src)
}

/// A whole array into packed linear memory: [`array_rules::download_array`](crate::array_rules::download_array).
pub fn download_array<T: BridgedBoxes>(dst: &super::AdBuf<T>, src: &super::AdArray<T>) {
    T::__download_array(dst, src)
}

/// Linear rows (`(pitch, rows)` as in [`memcpy_3d`]) into a `shape` box of an array at `at`
/// (elements, rows, slices): [`array_rules::to_array`](crate::array_rules::to_array).
pub fn copy_to_array<T: BridgedBoxes>(
    dst: &super::AdArray<T>,
    at: (usize, usize, usize),
    src: &super::AdBuf<T>,
    src_layout: (usize, usize),
    shape: (usize, usize, usize),
) {
    T::__to_array(dst, at, src, src_layout, shape)
}

/// A `shape` box of an array at `at` into linear rows:
/// [`array_rules::from_array`](crate::array_rules::from_array).
pub fn copy_from_array<T: BridgedBoxes>(
    dst: &super::AdBuf<T>,
    dst_layout: (usize, usize),
    src: &super::AdArray<T>,
    at: (usize, usize, usize),
    shape: (usize, usize, usize),
) {
    T::__from_array(dst, dst_layout, src, at, shape)
}

/// A `shape` box of one array into another:
/// [`array_rules::array_to_array`](crate::array_rules::array_to_array).
pub fn copy_array_to_array<T: BridgedBoxes>(
    dst: &super::AdArray<T>,
    at: (usize, usize, usize),
    src: &super::AdArray<T>,
    from: (usize, usize, usize),
    shape: (usize, usize, usize),
) {
    T::__array_to_array(dst, at, src, from, shape)
}
