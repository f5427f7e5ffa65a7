//! Forms users write that the macro must accept as they are: foreign attributes on parameters,
//! `usize` however spelled, an alias of the element type as a fill value, two views of unrelated
//! elided lifetimes, a stream type of the user's own, and the prelude's names.
#![deny(warnings)]

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, CudaViewMut, DriverError};
use rules_runtime::ops::AsStream;
use rules_runtime::prelude::*;
use std::sync::Arc;

#[allow(non_camel_case_types)]
type size_t = usize;
type Real = f32;

#[derivative_rule(copy2d)]
pub fn pitched(
    #[allow(unused_variables)]
    #[cfg_attr(all(), deny(unused_mut))]
    #[dst]
    dst: &mut [f32],
    #[src] src: &[f32],
    #[width] w: ::core::primitive::usize,
    #[height] h: size_t,
    #[dst_pitch] dp: std::primitive::usize,
    #[src_pitch] sp: usize,
) {
    for r in 0..h {
        let (d, s) = (r * dp / 4, r * sp / 4);
        dst[d..d + w].copy_from_slice(&src[s..s + w]);
    }
}

#[derivative_rule(fill)]
pub fn fill_real(#[dst] dst: &mut [f32], #[value] v: Real) {
    dst.fill(v);
}

#[derivative_rule(copy)]
pub fn dtod(
    s: &Arc<CudaStream>,
    #[dst] dst: &mut CudaViewMut<'_, f32>,
    #[src] src: &CudaViewMut<'_, f32>,
) -> Result<(), DriverError> {
    s.memcpy_dtod(src, dst)
}

#[derivative_rule(copy)]
pub fn real_slices(#[dst] dst: &mut [Real], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy)]
pub fn real_buffers(
    s: &Arc<CudaStream>,
    #[dst] dst: &mut rules_runtime::cudarc::driver::CudaSlice<Real>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    s.memcpy_dtod(src, dst)
}

#[derivative_rule(copy, dst = host, src = host)]
/// # Safety
/// `n` elements valid at both pointers.
pub unsafe fn spelled_pointers(
    #[dst] dst: *mut f32,
    #[src] src: *const ::core::primitive::f32,
    #[len] n: size_t,
) {
    unsafe { core::ptr::copy(src, dst, n) }
}

/// Views of two unrelated lifetimes, as a helper takes them.
pub fn helper(s: &Arc<CudaStream>, y: &mut CudaViewMut<'_, f32>, x: &CudaViewMut<'_, f32>) -> Result<()> {
    dtod_rule(s).forward(Const(y), Const(x))
}

/// A stream of the user's own.
pub struct MyStream(Arc<CudaStream>);
impl AsStream for MyStream {
    fn as_stream(&self) -> &CudaStream {
        &self.0
    }
}

#[derivative_rule(memset)]
pub fn zero(#[stream] s: &MyStream, #[dst] dst: &mut CudaSlice<f32>) -> Result<(), DriverError> {
    s.0.memset_zeros(dst)
}

/// The prelude's names.
pub fn names(_: Option<CopyTape>, _: Option<RegionTape<f32>>, _: Option<Error>, _: On<'_>) -> Result<()> {
    fn bound<T: Differentiable>() {}
    bound::<f32>();
    Ok(())
}

fn main() {
    let (mut x, mut dx) = (vec![0.0f32; 8], vec![1.0f32; 8]);
    let src = vec![1.0f32; 8];
    let mut rule = pitched_rule(2, 2, 16, 16);
    rule.forward(Duplicated::new(&mut x[..], &mut dx[..]), Const(&src[..])).unwrap();
    let tape = fill_real_rule().augmented_primal(Duplicated::new(&mut x[..], &mut dx[..]), Active(2.0)).unwrap();
    let [dv] = fill_real_rule().reverse(tape, Duplicated::new(&mut x[..], &mut dx[..]), Active(2.0)).unwrap();
    let _: f32 = dv;
}
