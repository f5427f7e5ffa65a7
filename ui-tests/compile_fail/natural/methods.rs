// A primitive written as a method: refused with the form that works (an associated function
// with `in_impl`, the receiver an ordinary parameter that holds the stream or is `#[inert]`).
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::derivative_rule;
use std::sync::Arc;

pub struct Device {
    pub stream: Arc<CudaStream>,
}

impl Device {
    #[derivative_rule(copy)]
    pub fn upload(&self, #[dst] dst: &mut CudaSlice<f32>, #[src] src: &[f32]) -> Result<(), DriverError> {
        self.stream.memcpy_htod(src, dst)
    }

    #[derivative_rule(copy, in_impl)]
    pub fn download(&self, #[dst] dst: &mut [f32], #[src] src: &CudaSlice<f32>) -> Result<(), DriverError> {
        self.stream.memcpy_dtoh(src, dst)
    }
}

fn main() {}
