// Doc comments and lints on parameters: rustc allows no doc comment on a function's parameter,
// so the macro takes each off the primal into the rule item's documentation; lints stay where
// they are.
#![deny(missing_docs)]
//! A crate whose rules document their parameters.
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::derivative_rule;
use std::sync::Arc;

/// Sets the whole buffer to a byte pattern.
#[derivative_rule(memset)]
pub fn set(
    /// the stream
    stream: &Arc<CudaStream>,
    /// the destination
    #[dst]
    dst: &mut CudaSlice<f32>,
    /// the byte written
    #[deny(unused)]
    #[value]
    v: u8,
) -> Result<(), DriverError> {
    stream.memset_zeros(dst)?;
    let _ = v;
    Ok(())
}

fn main() {}
