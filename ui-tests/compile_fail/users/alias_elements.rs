// Element types spelled through aliases are the compiler's to compare: an alias of another type
// is one error, at the source's type.
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::derivative_rule;
use std::sync::Arc;

type Wide = f64;

#[derivative_rule(copy)]
pub fn widen(
    s: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<Wide>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    let _ = (s, dst, src);
    Ok(())
}

fn main() {}
