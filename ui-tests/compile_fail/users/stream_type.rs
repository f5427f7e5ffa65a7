// A `#[stream]` of a type that only derefs to a stream: one error at its type, naming the
// trait to implement; the calls see nothing more.
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::derivative_rule;
use rules_runtime::prelude::*;
use std::sync::Arc;

pub struct MyStream(Arc<CudaStream>);
impl std::ops::Deref for MyStream {
    type Target = Arc<CudaStream>;
    fn deref(&self) -> &Arc<CudaStream> {
        &self.0
    }
}

#[derivative_rule(copy)]
pub fn dtod(
    #[stream] s: &MyStream,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    s.memcpy_dtod(src, dst)
}

pub fn user(s: &MyStream, y: &mut CudaSlice<f32>, x: &CudaSlice<f32>) {
    let _ = dtod_rule(s).forward(Const(&mut *y), Const(x));
    let _ = dtod_rule(s).augmented_primal(Const(y), Const(x));
}

fn main() {}
