//! Collective rules over NCCL, through the runtime's `cudarc` re-export: every kind, the
//! communicator found by its type or marked `#[comm]` (by reference or in an `Arc`), ranks of any
//! integer type, generic elements, views with elided lifetimes, `unsafe` primals, and a peer copy
//! (a plain `copy` rule whose buffers live on two devices). Compiled only: `main` needs no GPU.
#![allow(dead_code)]

use rules_runtime::{CollectiveRule, RecvRule, SendRule};
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, CudaViewMut, DriverError};
use rules_runtime::cudarc::nccl::{Comm, ReduceOp};
use rules_runtime::nccl::NcclElement;
use rules_runtime::{Const, Duplicated, derivative_rule};
use std::sync::Arc;

type NcclResult = Result<(), rules_runtime::Error>;

fn nccl(r: Result<impl Sized, rules_runtime::cudarc::nccl::result::NcclError>) -> NcclResult {
    r.map(|_| ()).map_err(|e| rules_runtime::Error::Nccl {
        op: "test",
        code: format!("{:?}", e.0),
        message: String::new(),
    })
}

/// Broadcast from `root` (read on the root only).
#[derivative_rule(broadcast)]
fn bcast(
    comm: &Comm,
    #[root] root: usize,
    #[src] x: &CudaSlice<f32>,
    #[dst] y: &mut CudaSlice<f32>,
) -> NcclResult {
    nccl(comm.broadcast(Some(x), y, root as i32))
}

/// Reduce (sum) to `root`, the communicator in an `Arc` and marked, an `i32` root.
#[derivative_rule(reduce)]
fn reduce_to(
    #[comm] c: &Arc<Comm>,
    #[root] root: i32,
    #[src] x: &CudaSlice<f64>,
    #[dst] y: &mut CudaSlice<f64>,
) -> NcclResult {
    nccl(c.reduce(x, Some(y), &ReduceOp::Sum, root))
}

/// All-gather, generic over the element.
#[derivative_rule(all_gather)]
fn gather<T: NcclElement>(
    comm: &Comm,
    #[src] x: &CudaSlice<T>,
    #[dst] y: &mut CudaSlice<T>,
) -> NcclResult {
    nccl(comm.all_gather(x, y))
}

/// Reduce-scatter (sum) between writable views of one lifetime.
#[derivative_rule(reduce_scatter)]
fn scatter<'v>(
    comm: &Comm,
    #[src] x: &CudaViewMut<'v, half::bf16>,
    #[dst] y: &mut CudaViewMut<'v, half::bf16>,
) -> NcclResult {
    nccl(comm.reduce_scatter(x, y, &ReduceOp::Sum))
}

/// All-reduce (sum); the output first.
#[derivative_rule(all_reduce)]
fn sum_all(comm: &Comm, #[dst] y: &mut CudaSlice<half::f16>, #[src] x: &CudaSlice<half::f16>) -> NcclResult {
    nccl(comm.all_reduce(x, y, &ReduceOp::Sum))
}

/// Send to a peer; a pass-through argument besides.
#[derivative_rule(send)]
fn send_to(comm: &Comm, #[peer] peer: u32, #[src] x: &CudaSlice<f32>, tag: u8) -> NcclResult {
    let _ = tag;
    nccl(comm.send(x, peer as i32))
}

/// Receive from a peer; an `unsafe` primal (its rule object's constructor is `unsafe`) and a
/// renamed rule object.
#[derivative_rule(recv, rule = receive)]
unsafe fn recv_from(comm: &Comm, #[peer] peer: usize, #[dst] y: &mut CudaSlice<f32>) -> NcclResult {
    nccl(comm.recv(y, peer as i32))
}

/// Both at once (a ring shift).
#[derivative_rule(send_recv)]
fn shift(
    comm: &Comm,
    #[send_to] next: usize,
    #[recv_from] prev: usize,
    #[src] x: &CudaSlice<f32>,
    #[dst] y: &mut CudaSlice<f32>,
) -> NcclResult {
    rules_runtime::cudarc::nccl::group_start().map_err(|_| rules_runtime::Error::NoNccl)?;
    let s = comm.send(x, next as i32);
    let r = comm.recv(y, prev as i32);
    rules_runtime::cudarc::nccl::group_end().map_err(|_| rules_runtime::Error::NoNccl)?;
    nccl(s)?;
    nccl(r)
}

/// A peer copy is a copy rule: `dst` and `src` may live on two devices (the stream is `dst`'s).
#[derivative_rule(copy)]
fn to_peer(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// The generated rule objects' methods take activities.
fn calls(
    comm: &Comm,
    x: &CudaSlice<f32>,
    dx: &mut CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    dy: &mut CudaSlice<f32>,
) -> NcclResult {
    let tape = gather_rule(comm).augmented_primal(Const(&mut *y), Duplicated::new(x, &mut *dx))?;
    gather_rule(comm).reverse(tape, Const(&mut *y), Duplicated::new(x, &mut *dx))?;
    bcast_rule(comm, 0).forward(Duplicated::new(&mut *y, &mut *dy), Const(x))?;
    // SAFETY: the buffers are device memory on the communicator's device.
    let mut recv = unsafe { receive(comm, 0) };
    let tape = recv.augmented_primal(Duplicated::new(&mut *y, &mut *dy))?;
    recv.reverse(tape, Duplicated::new(&mut *y, &mut *dy))?;
    send_to_rule(comm, 0, 7).forward(Duplicated::new(x, &mut *dx))
}

fn main() {}
