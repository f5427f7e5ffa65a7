//! Shared rules and helpers for the end-to-end tests and the `round_trip` example.
//!
//! The copy primitives here are written as a user writes them: a plain function annotated with
//! `#[derivative_rule(copy)]`, next to which the macro generates the rule object `*_rule` (its
//! methods `forward`, `augmented_primal` and `reverse`). They are generic over the element type so that every
//! suite uses the same definition:
//! - [`upload`] (host → device) and [`download`] (device → host), on cudarc buffers and the
//!   copy's own stream: the seed's round trip;
//! - [`copy_slice`] (slice shape) and [`copy_ptr`] (pointer shape, host memory), for the host
//!   suites that sweep element types.
//!
//! - [`arrays`]: copies between CUDA arrays and linear memory (`copy2d`, `copy3d`, whole-array
//!   `copy`), through the raw driver's `cuMemcpy3DAsync`.
//!
//! The tests that exercise other shapes (unified and pinned memory, collectives, raw device
//! pointers) define their own rules beside them.
#![deny(missing_docs)]

pub mod arrays;

/// The README's `upload`, as it is written there (its later snippets use its rule).
pub mod readme {
    use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
    use rules_runtime::derivative_rule;
    use std::sync::Arc;

    /// Host → device, `f32`.
    #[derivative_rule(copy)]
    pub fn upload(
        stream: &Arc<CudaStream>,
        #[dst] dst: &mut CudaSlice<f32>,
        #[src] src: &[f32],
    ) -> Result<(), DriverError> {
        stream.memcpy_htod(src, dst)
    }
}

/// The Rust snippets of the repository's pages, compiled (and, where they need no GPU, run) by
/// `cargo test --doc -p rules-tests`. A snippet that needs a GPU is `no_run`; those of
/// docs/autodiff.md need nightly's `std::autodiff` and are `ignore` (`tools/autodiff.sh` builds
/// `examples/autodiff/`, where they come from). `tests/pages.rs` fails when a page with a Rust
/// snippet is missing here.
#[cfg(doctest)]
mod pages {
    #[doc = include_str!("../../README.md")]
    struct Readme;
    #[doc = include_str!("../../rules-runtime/README.md")]
    struct RuntimeReadme;
    #[doc = include_str!("../../rules-macro/README.md")]
    struct MacroReadme;
    #[doc = include_str!("../../docs/arrays.md")]
    struct Arrays;
    #[doc = include_str!("../../docs/multi-gpu.md")]
    struct MultiGpu;
    #[doc = include_str!("../../docs/autodiff.md")]
    struct Autodiff;
    #[doc = include_str!("../../docs/testing.md")]
    struct Testing;
    #[doc = include_str!("../../docs/build-cost.md")]
    struct BuildCost;
}

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, DriverError};
use rules_runtime::{Differentiable, derivative_rule};
use std::sync::Arc;

/// Host → device: `dst ← src`, enqueued on `stream` (the stream the shadow work also runs on).
/// Buffers of different lengths are `CUDA_ERROR_INVALID_VALUE`, before any driver call (cudarc
/// would panic on a shorter `dst`).
#[derivative_rule(copy)]
pub fn upload<T: Differentiable + DeviceRepr>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<T>,
    #[src] src: &[T],
) -> Result<(), DriverError> {
    same_len(dst.len(), src.len())?;
    stream.memcpy_htod(src, dst)
}

/// Device → host: `dst ← src`, enqueued on `stream`; lengths as in [`upload`].
#[derivative_rule(copy)]
pub fn download<T: Differentiable + DeviceRepr>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [T],
    #[src] src: &CudaSlice<T>,
) -> Result<(), DriverError> {
    same_len(dst.len(), src.len())?;
    stream.memcpy_dtoh(src, dst)
}

/// `CUDA_ERROR_INVALID_VALUE` unless a copy's two buffers have the same length: a primitive
/// checks its own arguments, so that it is safe (and does not panic) when called directly.
fn same_len(dst: usize, src: usize) -> Result<(), DriverError> {
    if dst == src {
        Ok(())
    } else {
        Err(arrays::invalid_value())
    }
}

/// The plain slice copy `dst ← src`, for any differentiable element type.
#[derivative_rule(copy)]
pub fn copy_slice<T: Differentiable>(#[dst] dst: &mut [T], #[src] src: &[T]) {
    dst.copy_from_slice(src);
}

/// The pointer copy `dst[doff..doff + n] ← src[soff..soff + n]` on host memory.
///
/// # Safety
/// Both ranges valid for `n` elements and disjoint.
#[derivative_rule(copy, dst = host, src = host)]
pub unsafe fn copy_ptr<T: Differentiable>(
    #[dst] dst: *mut T,
    #[dst_offset] doff: usize,
    #[src] src: *const T,
    #[src_offset] soff: usize,
    #[len] n: usize,
) {
    unsafe { core::ptr::copy_nonoverlapping(src.add(soff), dst.add(doff), n) }
}

/// `xs` as elements of `T` (real parts only; exact for the small dyadic values the tests use).
pub fn vals<T: Differentiable>(xs: &[f64]) -> Vec<T> {
    xs.iter().map(|&x| T::from_parts([x, 0.0])).collect()
}

/// `n` distinct, exactly representable values of `T` starting at `start` (step 1/4; complex
/// values get a distinct imaginary part too).
pub fn ramp<T: Differentiable>(n: usize, start: f64) -> Vec<T> {
    (0..n)
        .map(|i| {
            let re = start + (i % 64) as f64 / 4.0;
            T::from_parts([re, -re / 2.0])
        })
        .collect()
}

/// Element-wise `a + b` in `T`'s own arithmetic.
pub fn add<T: Differentiable>(a: &[T], b: &[T]) -> Vec<T> {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| T::add(*x, *y)).collect()
}

/// A small deterministic generator (splitmix64) for lengths and offsets.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..bound` (`bound > 0`).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }
}

/// One mutable slice per shadow buffer, for `Duplicated::batch` (the width `N` is inferred).
pub fn lanes<T, const N: usize>(bufs: &mut [Vec<T>; N]) -> [&mut [T]; N] {
    bufs.each_mut().map(|b| b.as_mut_slice())
}

/// One raw pointer per shadow buffer, for `Duplicated::batch` on pointer rules.
pub fn lane_ptrs<T, const N: usize>(bufs: &mut [Vec<T>; N]) -> [*mut T; N] {
    bufs.each_mut().map(|b| b.as_mut_ptr())
}

/// `N` buffers, each a copy of `v`.
pub fn copies<T: Clone, const N: usize>(v: &[T]) -> [Vec<T>; N] {
    core::array::from_fn(|_| v.to_vec())
}

/// The element indices of a box of `size`-byte elements, row by row (x fastest): the reference
/// the region tests compare the runtime's box walks with.
pub fn box_indices(r: &rules_runtime::Pitched, size: usize) -> Vec<usize> {
    let row = if r.height > 1 || r.depth > 1 {
        r.pitch / size
    } else {
        r.width
    };
    let mut v = Vec::with_capacity(r.elements());
    for z in 0..r.depth {
        for y in 0..r.height {
            for x in 0..r.width {
                v.push(r.offset + z * row * r.slice_height + y * row + x);
            }
        }
    }
    v
}
