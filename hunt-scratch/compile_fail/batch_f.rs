//! Batch F: two streams; a stream marked inert.
#![allow(unused_variables, dead_code, unused_imports)]
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::prelude::*;
use rules_runtime::derivative_rule;
use std::sync::Arc;

// F1 two unmarked streams.
#[derivative_rule(copy)]
pub fn f1_two_streams(a: &Arc<CudaStream>, b: &Arc<CudaStream>, #[dst] dst: &mut CudaSlice<f32>, #[src] src: &[f32]) -> Result<(), DriverError> { b.memcpy_htod(src, dst) }
// F2 one marked, the copy enqueued on the other.
#[derivative_rule(copy)]
pub fn f2_marked_other(#[stream] a: &Arc<CudaStream>, b: &Arc<CudaStream>, #[dst] dst: &mut CudaSlice<f32>, #[src] src: &[f32]) -> Result<(), DriverError> { b.memcpy_htod(src, dst) }
// F3 the stream marked inert.
#[derivative_rule(copy)]
pub fn f3_inert_stream(#[inert] s: &Arc<CudaStream>, #[dst] dst: &mut CudaSlice<f32>, #[src] src: &[f32]) -> Result<(), DriverError> { s.memcpy_htod(src, dst) }
fn main() {}
