use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, CudaView, DriverError};
use rules_runtime::cudarc::nccl::Comm;
use rules_runtime::{CollectiveRule, CopyRule};
use rules_runtime::{Const, derivative_rule};
use std::sync::Arc;

// A read-only view cannot be a rule's source: the reverse pass accumulates into the source's
// shadow, and a `CudaView` hands out no writable address. Refused at compile time where the rule is
// defined, at the view's type (and at every use), never in the reverse pass.
#[derivative_rule(copy)]
fn copy_from_view(
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

fn use_them(s: &Arc<CudaStream>, comm: &Comm, y: &mut CudaSlice<f32>, x: &CudaView<'_, f32>) {
    let _ = copy_from_view_rule(s).forward(Const(&mut *y), Const(x));
    let _ = sum_from_view_rule(comm).forward(Const(y), Const(x));
}

fn main() {}
