// Doc comments on parameters are the compiler's to judge, not misspelled roles: one error each,
// the compiler's own, and nothing about `#[dst]`.
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::derivative_rule;
use std::sync::Arc;

#[derivative_rule(memset)]
pub fn zero(
    /// the stream
    stream: &Arc<CudaStream>,
    /// the destination
    #[dst] dst: &mut CudaSlice<f32>,
    #[deny(unused)] v: u8,
) -> Result<(), DriverError> {
    let _ = v;
    stream.memset_zeros(dst)
}

fn main() {}
