//! Rules written by a `macro_rules!` macro, their types passed as `$t:ty` fragments (which reach
//! the attribute wrapped in invisible groups): buffers and streams are still recognised.
#![allow(dead_code)]

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::{Const, CopyRule, Duplicated, derivative_rule};
use std::sync::Arc;

macro_rules! host_copy {
    ($name:ident, $dst:ty, $src:ty) => {
        #[derivative_rule(copy)]
        fn $name(#[dst] dst: $dst, #[src] src: $src) {
            dst.copy_from_slice(src);
        }
    };
}

macro_rules! device_copy {
    ($name:ident, $stream:ty, $elem:ty) => {
        #[derivative_rule(copy)]
        fn $name(
            stream: $stream,
            #[dst] dst: &mut CudaSlice<$elem>,
            #[src] src: &CudaSlice<$elem>,
        ) -> Result<(), DriverError> {
            stream.memcpy_dtod(src, dst)
        }
    };
}

host_copy!(copy_f32, &mut [f32], &[f32]);
host_copy!(copy_f64, &mut [f64], &[f64]);
device_copy!(dtod_f32, &Arc<CudaStream>, f32);

fn main() {
    let (x, mut y, mut dy) = ([1.0f32, 2.0], [0.0f32; 2], [0.0f32; 2]);
    copy_f32_rule()
        .forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))
        .unwrap();
    assert_eq!(y, x);
}
