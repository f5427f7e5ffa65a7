//! Compiles only if `rules-runtime` and this crate's cudarc are one crate: a rule written against
//! the user's own cudarc types, and the runtime's re-export naming the same types.

use cudarc::driver::{CudaSlice, CudaStream, DriverError};
use std::sync::Arc;
use rules_runtime::derivative_rule;

/// The user's upload, on their cudarc.
#[derivative_rule(copy)]
pub fn upload(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    stream.memcpy_htod(src, dst)
}

/// The runtime's re-export is the same cudarc.
pub fn same_crate(x: &CudaSlice<f32>) -> &rules_runtime::cudarc::driver::CudaSlice<f32> {
    x
}
