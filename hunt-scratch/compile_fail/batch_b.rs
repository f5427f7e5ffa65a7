//! Batch B: references the macro takes as the stream, generics, const generics, return values.
#![allow(unused_variables, dead_code, unused_imports)]
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::ops::AsStream;
use rules_runtime::prelude::*;
use rules_runtime::{Differentiable, derivative_rule};
use std::sync::Arc;

type Offset = usize;
type Real64 = f64;
pub struct Config { pub off: usize }

// B1 a config struct by reference, not a stream.
#[derivative_rule(copy)]
pub fn b1_config_ref(#[dst] dst: &mut [f32], #[src] src: &[f32], cfg: &Config) { dst[cfg.off..].copy_from_slice(&src[cfg.off..]); }
// B2 a closure by reference.
#[derivative_rule(copy)]
pub fn b2_dyn_fn(#[dst] dst: &mut [f32], #[src] src: &[f32], f: &dyn Fn(f32) -> f32) { for i in 0..dst.len() { dst[i] = f(src[i]); } }
// B3 an offset alias by reference.
#[derivative_rule(copy)]
pub fn b3_offset_ref(#[dst] dst: &mut [f32], #[src] src: &[f32], off: &Offset) { dst[*off..].copy_from_slice(&src[*off..]); }
// B5 a stream by value.
#[derivative_rule(copy)]
pub fn b5_stream_by_value(s: Arc<CudaStream>, #[dst] dst: &mut CudaSlice<f32>, #[src] src: &[f32]) -> Result<(), DriverError> { s.memcpy_htod(src, dst) }
// B6 an optional stream.
#[derivative_rule(copy)]
pub fn b6_stream_option(s: Option<&Arc<CudaStream>>, #[dst] dst: &mut CudaSlice<f32>, #[src] src: &[f32]) -> Result<(), DriverError> { s.unwrap().memcpy_htod(src, dst) }
// B7 a right copy between arrays of a const-generic length.
#[derivative_rule(copy)]
pub fn b7_const_n<const N: usize>(#[dst] dst: &mut [f32; N], #[src] src: &[f32; N]) { *dst = *src; }
// B8 a bound that names another generic (P03: a memset value B: Into<T>).
#[derivative_rule(memset)]
pub fn b8_memset_into<T: Differentiable, B: Copy + Into<T>>(#[dst] dst: &mut [T], #[value] v: B) { dst.fill(v.into()); }
// B8b a right copy with an inert generic tag whose bound names T.
#[derivative_rule(copy)]
pub fn b8b_inert_tag<T: Differentiable, L: Copy + PartialEq<T>>(#[dst] dst: &mut [T], #[src] src: &[T], #[inert] tag: L) { dst.copy_from_slice(src); }
// B8c a right copy with a where clause.
#[derivative_rule(copy)]
pub fn b8c_where<T>(#[dst] dst: &mut [T], #[src] src: &[T]) where T: Differentiable { dst.copy_from_slice(src); }
// B9 a fill whose value alias is f64 on an f32 buffer.
#[derivative_rule(fill)]
pub fn b9_fill_alias_f64(#[dst] dst: &mut [f32], #[value] v: Real64) { dst.fill(v as f32); }
// B12 #[stream] on a struct that is not a stream.
#[derivative_rule(copy)]
pub fn b12_stream_marked(#[stream] s: &Config, #[dst] dst: &mut [f32], #[src] src: &[f32]) { dst.copy_from_slice(src); }
// B13 a mutable reference to a user struct.
#[derivative_rule(copy)]
pub fn b13_mut_struct(#[dst] dst: &mut [f32], #[src] src: &[f32], cfg: &mut Config) { cfg.off += 1; dst.copy_from_slice(src); }
// B17 returns how many elements it wrote.
#[derivative_rule(copy)]
pub fn b17_returns_count(#[dst] dst: &mut [f32], #[src] src: &[f32]) -> usize { let k = dst.len() / 2; dst[..k].copy_from_slice(&src[..k]); k }
// B17b returns Result<usize, DriverError>.
#[derivative_rule(copy)]
pub fn b17b_returns_result_count(#[dst] dst: &mut [f32], #[src] src: &[f32]) -> Result<usize, DriverError> { dst.copy_from_slice(src); Ok(dst.len()) }
// B18 a right copy sharing one named lifetime.
#[derivative_rule(copy)]
pub fn b18_one_lifetime<'a>(#[dst] dst: &'a mut [f32], #[src] src: &'a [f32]) { dst.copy_from_slice(src); }
fn main() {}
