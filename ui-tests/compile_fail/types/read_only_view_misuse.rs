use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, CudaView, DriverError};
use rules_runtime::cudarc::nccl::Comm;
use rules_runtime::{CollectiveRule, CopyRule};
use rules_runtime::{Const, Duplicated, derivative_rule};
use std::sync::Arc;

// A read-only `CudaView` is a source's primal only (`pass/read_only_sources.rs`): a destination
// and every shadow are written. Each misuse is refused at compile time, saying what to write.

// As a destination: refused where the rule is defined, at the view's type.
#[derivative_rule(copy)]
fn copy_into_view(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaView<'_, f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    let _ = (stream, dst, src);
    Ok(())
}

#[derivative_rule(all_reduce)]
fn sum_into_view(comm: &Comm, #[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaView<'_, f32>) {
    let _ = (comm, x, y);
}

#[derivative_rule(copy)]
fn dtod(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaView<'_, f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

#[derivative_rule(all_reduce)]
fn sum_from_view(comm: &Comm, #[src] x: &CudaView<'_, f32>, #[dst] y: &mut CudaSlice<f32>) {
    let _ = (comm, x, y);
}

// As a shadow: refused where the rule is called.
fn call(
    s: &Arc<CudaStream>,
    comm: &Comm,
    y: &mut CudaSlice<f32>,
    x: &CudaView<'_, f32>,
    dx: &mut CudaSlice<f32>,
) {
    // A shadow given by shared reference: it is written.
    let _ = dtod_rule(s).forward(Const(&mut *y), Duplicated::new(x, &*dx));
    // A shadow that is itself a read-only view.
    let mut dxv = dx.slice(..);
    let _ = dtod_rule(s).forward(Const(&mut *y), Duplicated::new(x, &mut dxv));
    let _ = sum_from_view_rule(comm).forward(Const(&mut *y), Duplicated::new(x, &mut dxv));
}

fn main() {}
