// Issue 21 item 8: a tape belongs to one reverse. The reverse consumes it, so replaying it (which
// would move the same cotangent twice, or restore stale bytes) does not compile.
#![allow(dead_code)]

use rules_runtime::cudarc::driver::CudaSlice;
use rules_runtime::cudarc::nccl::Comm;
use rules_runtime::{CollectiveRule, CopyRule, Duplicated, derivative_rule};

#[derivative_rule(copy)]
fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(all_reduce)]
fn sum_all(
    comm: &Comm,
    #[src] x: &CudaSlice<f32>,
    #[dst] y: &mut CudaSlice<f32>,
) -> Result<(), rules_runtime::Error> {
    comm.all_reduce(x, y, &rules_runtime::cudarc::nccl::ReduceOp::Sum)
        .map(drop)
        .map_err(|_| rules_runtime::Error::NoNccl)
}

fn copy_replayed() {
    let x = [1.0f32, 2.0];
    let (mut y, mut dx, mut dy) = ([0.0f32; 2], [0.0f32; 2], [0.0f32; 2]);
    let tape = copy_into_rule()
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    dy = [1.0; 2];
    copy_into_rule()
        .reverse(
            tape,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    dy = [1.0; 2];
    copy_into_rule()
        .reverse(
            tape,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
}

fn collective_replayed(
    comm: &Comm,
    x: &CudaSlice<f32>,
    dx: &mut CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    dy: &mut CudaSlice<f32>,
) {
    let tape = sum_all_rule(comm)
        .augmented_primal(Duplicated::new(&mut *y, &mut *dy), Duplicated::new(x, &mut *dx))
        .unwrap();
    sum_all_rule(comm)
        .reverse(tape, Duplicated::new(&mut *y, &mut *dy), Duplicated::new(x, &mut *dx))
        .unwrap();
    sum_all_rule(comm)
        .reverse(tape, Duplicated::new(&mut *y, &mut *dy), Duplicated::new(x, &mut *dx))
        .unwrap();
}

fn main() {}
