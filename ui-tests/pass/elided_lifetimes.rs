//! View-to-view rules with elided lifetimes, generic or not: the generated rules name the views'
//! lifetimes once for both buffers when their types differ only in lifetimes. Compiled only.
#![allow(dead_code)]

use rules_runtime::cudarc::driver::{CudaStream, CudaView, CudaViewMut, DeviceRepr, DriverError};
use std::sync::Arc;
use rules_runtime::{Differentiable, derivative_rule};

#[derivative_rule(copy)]
fn generic_views<T: Differentiable + DeviceRepr>(
    stream: &Arc<CudaStream>,
    #[dst] d: &mut CudaViewMut<'_, T>,
    #[src] s: &CudaViewMut<'_, T>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(s, d)
}

#[derivative_rule(copy)]
fn f32_views(
    stream: &Arc<CudaStream>,
    #[dst] d: &mut CudaViewMut<'_, f32>,
    #[src] s: &CudaViewMut<'_, f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(s, d)
}

/// A read-only view is no source (its shadow could not be written), but the lifetimes of two
/// different view types are named apart and need no such care.
#[derivative_rule(copy)]
fn slice_views(
    stream: &Arc<CudaStream>,
    #[dst] d: &mut CudaViewMut<'_, f64>,
    #[src] s: &rules_runtime::cudarc::driver::CudaSlice<f64>,
) -> Result<(), DriverError> {
    let _: Option<CudaView<'_, f64>> = None;
    stream.memcpy_dtod(s, d)
}

fn main() {}
