//! Ready-made rules for cudarc's own copies: a program whose copies are cudarc's writes no
//! annotation at all.
//!
//! Each function here is cudarc's call, as a safe primitive annotated with this crate's own
//! `#[derivative_rule]`, so its rule object is next to it (`memcpy_htod_rule(&stream)`), with
//! the methods of [`CopyRule`](crate::CopyRule) (or [`MemsetRule`](crate::MemsetRule)):
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use rules_runtime::cudarc_rules::{memcpy_dtoh_rule, memcpy_htod_rule};
//! use rules_runtime::prelude::*;
//!
//! let stream = rules_runtime::cuda::stream(0)?;
//! let x = [1.0f32, 2.0, 3.0];
//! let (mut dx, mut h, mut dh) = ([0.0f32; 3], [0.0f32; 3], [0.0f32; 3]);
//! let (mut d, mut dd) = (stream.alloc_zeros::<f32>(3)?, stream.alloc_zeros::<f32>(3)?);
//! let up = memcpy_htod_rule(&stream)
//!     .augmented_primal(Duplicated::new(&mut d, &mut dd), Duplicated::new(&x[..], &mut dx[..]))?;
//! let down = memcpy_dtoh_rule(&stream)
//!     .augmented_primal(Duplicated::new(&mut h[..], &mut dh[..]), Duplicated::new(&d, &mut dd))?;
//! // f(x) = sum(h²): the seed of the reverse pass is df/dh = 2h.
//! for (g, v) in dh.iter_mut().zip(&h) {
//!     *g = 2.0 * v;
//! }
//! memcpy_dtoh_rule(&stream)
//!     .reverse(down, Duplicated::new(&mut h[..], &mut dh[..]), Duplicated::new(&d, &mut dd))?;
//! memcpy_htod_rule(&stream)
//!     .reverse(up, Duplicated::new(&mut d, &mut dd), Duplicated::new(&x[..], &mut dx[..]))?;
//! assert_eq!(dx, [2.0, 4.0, 6.0]);
//! # Ok(())
//! # }
//! ```
//!
//! The buffers are any cudarc accepts for the call (`CudaSlice`, `CudaViewMut`, `UnifiedSlice`
//! on the device side, and a read-only `CudaView` as a source, its shadows a `CudaViewMut` or a
//! `CudaSlice`; a slice, a `Vec` or a `PinnedHostSlice` on the host side), of any element
//! type that is both [`Differentiable`] and cudarc's `DeviceRepr` (f32, f64, f16, bf16).
//! Buffers of different lengths are `CUDA_ERROR_INVALID_VALUE` from the primitive, before any
//! driver call (cudarc itself panics on a shorter destination), and the rules refuse them with
//! a typed error before that.
//!
//! Not here, and why:
//! - cudarc's allocating copies (`clone_htod`, `clone_dtoh`, `clone_dtod`, `memcpy_stod`): their
//!   destination is made by the call, but a rule's destination and its shadow are the caller's
//!   (the shadow is where the caller reads the derivative, and the reverse needs both). Allocate
//!   the two with `alloc_zeros` and use the copy's rule: `clone_htod(x)` is `alloc` +
//!   [`memcpy_htod`].
//! - The driver's box copies between linear memory and CUDA arrays, which cudarc does not have
//!   as safe calls, are ready-made in [`crate::array_rules`]; other pitched copies of your own
//!   are `#[derivative_rule(copy2d)]` or `copy3d` (docs/arrays.md).
#![forbid(unsafe_code)]

use crate::element::Differentiable;
use cudarc::driver::{
    CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, DriverError, HostSlice, ValidAsZeroBits, sys,
};
use rules_macro::derivative_rule;
use std::sync::Arc;

/// What a primitive answers, before any driver call, for buffers of different lengths: the
/// driver's own answer to a bad copy.
fn same_len(dst: usize, src: usize) -> Result<(), DriverError> {
    if dst == src {
        Ok(())
    } else {
        Err(DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE))
    }
}

/// Host → device, `stream.memcpy_htod(src, dst)`: `dst ← src`.
#[derivative_rule(copy, crate = crate)]
pub fn memcpy_htod<T, D, S>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut D,
    #[src] src: &S,
) -> Result<(), DriverError>
where
    T: Differentiable + DeviceRepr,
    D: DevicePtrMut<T>,
    S: HostSlice<T> + ?Sized,
{
    same_len(dst.len(), src.len())?;
    stream.memcpy_htod(src, dst)
}

/// Device → host, `stream.memcpy_dtoh(src, dst)`: `dst ← src`.
#[derivative_rule(copy, crate = crate)]
pub fn memcpy_dtoh<T, D, S>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut D,
    #[src] src: &S,
) -> Result<(), DriverError>
where
    T: Differentiable + DeviceRepr,
    D: HostSlice<T> + ?Sized,
    S: DevicePtr<T>,
{
    same_len(dst.len(), src.len())?;
    stream.memcpy_dtoh(src, dst)
}

/// Device → device, `stream.memcpy_dtod(src, dst)`: `dst ← src`, also between devices (a peer
/// copy, whose reverse accumulates across them).
#[derivative_rule(copy, crate = crate)]
pub fn memcpy_dtod<T, D, S>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut D,
    #[src] src: &S,
) -> Result<(), DriverError>
where
    T: Differentiable + DeviceRepr,
    D: DevicePtrMut<T>,
    S: DevicePtr<T>,
{
    same_len(dst.len(), src.len())?;
    stream.memcpy_dtod(src, dst)
}

/// `stream.memset_zeros(dst)`: `dst ← 0`; its shadows are zeroed (forward and reverse).
#[derivative_rule(memset, crate = crate)]
pub fn memset_zeros<T, D>(stream: &Arc<CudaStream>, #[dst] dst: &mut D) -> Result<(), DriverError>
where
    T: Differentiable + DeviceRepr + ValidAsZeroBits,
    D: DevicePtrMut<T>,
{
    stream.memset_zeros(dst)
}
