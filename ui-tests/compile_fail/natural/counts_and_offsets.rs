#![allow(unused_variables)]
// The forms a cudarc user writes first: a count, an offset, a range, a flag or a value beside
// the buffers. The primitive may write part of the buffer (or something else than the kind
// says), which the rule cannot see: each is refused at the parameter, with the ways out named.
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::derivative_rule;
use std::sync::Arc;

#[derivative_rule(memset)]
pub fn clear_range(
    stream: &Arc<CudaStream>,
    #[dst] buf: &mut CudaSlice<f32>,
    start: usize,
    n: usize,
) -> Result<(), DriverError> {
    stream.memset_zeros(&mut buf.slice_mut(start..start + n))
}

#[derivative_rule(fill)]
pub fn fill_range(#[dst] buf: &mut [f32], start: usize, n: usize, #[value] v: f32) {
    buf[start..start + n].fill(v);
}

#[derivative_rule(copy)]
pub fn copy_prefix(#[dst] dst: &mut [f32], #[src] src: &[f32], k: usize) {
    dst[..k].copy_from_slice(&src[..k]);
}

#[derivative_rule(copy)]
pub fn copy_range(#[dst] dst: &mut [f32], #[src] src: &[f32], range: std::ops::Range<usize>) {
    dst[range.clone()].copy_from_slice(&src[range]);
}

#[derivative_rule(copy)]
pub fn maybe_copy(#[dst] dst: &mut [f32], #[src] src: &[f32], skip: bool) {
    if !skip {
        dst.copy_from_slice(src);
    }
}

#[derivative_rule(copy)]
pub fn scaled(#[dst] dst: &mut [f32], #[src] src: &[f32], by: f32) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = by * s;
    }
}

#[derivative_rule(memset)]
pub fn set_to(#[dst] buf: &mut [f32], value: f32) {
    buf.fill(value);
}

#[derivative_rule(copy, dst = device, src = device)]
pub unsafe fn dtod_at(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
    offset: usize,
) {
}

#[derivative_rule(copy2d)]
pub fn rows(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[width] w: usize,
    #[height] h: usize,
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
    first_row: u32,
) {
}

fn main() {}
