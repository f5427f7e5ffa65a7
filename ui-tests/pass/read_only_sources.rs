//! A read-only `&CudaView` (what cudarc's own copies take for a source) as the source of every
//! kind that has one: `copy`, `copy2d`, a `fill` from a one-element buffer, and the collectives.
//! The primal is only read; its shadows are writable cudarc buffers (`&mut CudaViewMut` or
//! `&mut CudaSlice`). Compiled only: the GPU suite runs such rules (`tests/tests/gpu_views.rs`).
#![allow(dead_code)]

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DriverError};
use rules_runtime::cudarc::nccl::{Comm, ReduceOp};
use rules_runtime::nccl::NcclElement;
use rules_runtime::prelude::*;
use rules_runtime::{Differentiable, Result};
use std::sync::Arc;

/// cudarc's device-to-device copy, as cudarc's signature has it.
#[derivative_rule(copy)]
fn dtod(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaViewMut<'_, f32>,
    #[src] src: &CudaView<'_, f32>,
) -> core::result::Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// Generic over the element, into a whole buffer.
#[derivative_rule(copy)]
fn dtod_into<T: Differentiable + rules_runtime::cudarc::driver::DeviceRepr>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<T>,
    #[src] src: &CudaView<'_, T>,
) -> core::result::Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// A writable view as the source of a rule into a whole buffer, generic over the element: the
/// two buffer types differ, and the macro's bound on the whole buffer says its element (a bare
/// `CudaSlice<T>: ShadowMemory` hid it, and `T` did not match the view's: E0271 before).
#[derivative_rule(copy)]
fn view_mut_into<T: Differentiable + rules_runtime::cudarc::driver::DeviceRepr>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<T>,
    #[src] src: &CudaViewMut<'_, T>,
) -> core::result::Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// Device to host from a view.
#[derivative_rule(copy)]
fn dtoh(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f64],
    #[src] src: &CudaView<'_, f64>,
) -> core::result::Result<(), DriverError> {
    stream.memcpy_dtoh(src, dst)
}

/// A pitched copy from a view.
#[derivative_rule(copy2d)]
fn rows_from_view(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaView<'_, f32>,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> core::result::Result<(), DriverError> {
    let _ = (stream, dst, src, dpitch, spitch, width, height);
    Ok(())
}

/// A fill from a value held in a one-element read-only view.
#[derivative_rule(fill)]
fn fill_from_view(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: &CudaView<'_, f32>,
) -> core::result::Result<(), DriverError> {
    let _ = (stream, dst, v);
    Ok(())
}

/// A collective whose input is a read-only view.
#[derivative_rule(all_reduce)]
fn sum_from_view<T: NcclElement>(comm: &Comm, #[src] x: &CudaView<'_, T>, #[dst] y: &mut CudaSlice<T>) -> Result<()> {
    comm.all_reduce(x, y, &ReduceOp::Sum)
        .map(drop)
        .map_err(|e| rules_runtime::Error::Nccl { op: "all_reduce", code: format!("{:?}", e.0), message: String::new() })
}

/// `send` from a read-only view.
#[derivative_rule(send)]
fn send_view(comm: &Comm, #[peer] peer: usize, #[src] x: &CudaView<'_, f32>) -> Result<()> {
    let _ = (comm, peer, x);
    Ok(())
}

/// The forms a caller writes: the shadow a `CudaViewMut` or a `CudaSlice`, one lane or a batch,
/// `DuplicatedOnly`, `Const`; and a whole buffer as the source of a rule on views.
fn call(
    s: &Arc<CudaStream>,
    comm: &Comm,
    (y, dy): (&mut CudaSlice<f32>, &mut CudaSlice<f32>),
    (x, dx): (&CudaSlice<f32>, &mut CudaSlice<f32>),
) -> Result<()> {
    let xv = x.slice(1..3);
    let mut dxv = dx.slice_mut(1..3);
    let mut yv = y.slice_mut(0..2);
    let mut dyv = dy.slice_mut(0..2);
    dtod_rule(s).forward(
        Duplicated::new(&mut yv, &mut dyv),
        Duplicated::new(&xv, &mut dxv),
    )?;
    let tape = dtod_rule(s).augmented_primal(Duplicated::new(&mut yv, &mut dyv), Const(&xv))?;
    dtod_rule(s).reverse(tape, Duplicated::new(&mut yv, &mut dyv), Duplicated::new(&xv, &mut dxv))?;
    drop((yv, dyv, dxv));

    let (mut a, mut b) = (s.alloc_zeros::<f32>(2).unwrap(), s.alloc_zeros::<f32>(2).unwrap());
    let mut ys: CudaSlice<f32> = s.alloc_zeros(2).unwrap();
    dtod_into_rule(s).forward(
        Duplicated::batch(&mut ys, [&mut a, &mut b]),
        DuplicatedOnly::batch(&xv, [&mut s.alloc_zeros::<f32>(2).unwrap(), &mut s.alloc_zeros(2).unwrap()]),
    )?;
    let mut host = [0.0f64; 2];
    let xd = s.alloc_zeros::<f64>(2).unwrap();
    let mut dxd = s.alloc_zeros::<f64>(2).unwrap();
    let mut dxd_view = dxd.slice_mut(..);
    dtoh_rule(s).forward(Const(&mut host[..]), Duplicated::new(&xd.as_view(), &mut dxd_view))?;

    let v = x.slice(0..1);
    let mut dv = dx.slice_mut(0..1);
    fill_from_view_rule(s).forward(Duplicated::new(y, dy), Duplicated::new(&v, &mut dv))?;
    drop(dv);
    let tape = sum_from_view_rule(comm).augmented_primal(Const(&mut a), Duplicated::new(&x.as_view(), &mut *dx))?;
    sum_from_view_rule(comm).reverse(tape, Const(&mut a), Duplicated::new(&x.as_view(), &mut *dx))?;
    send_view_rule(comm, 1).forward(Duplicated::new(&x.as_view(), &mut b.slice_mut(..)))?;

    // The ready-made rules for cudarc's copies take a view for a source, as cudarc does.
    use rules_runtime::cudarc_rules::{memcpy_dtod_rule, memcpy_dtoh_rule};
    let (xv, mut dxv) = (x.slice(0..2), dx.slice_mut(0..2));
    memcpy_dtod_rule(s).forward(Duplicated::new(&mut a, &mut b), Duplicated::new(&xv, &mut dxv))?;
    let mut h = [0.0f32; 2];
    let mut dh = [0.0f32; 2];
    let tape = memcpy_dtoh_rule(s).augmented_primal(Duplicated::new(&mut h[..], &mut dh[..]), Const(&xv))?;
    memcpy_dtoh_rule(s).reverse(tape, Duplicated::new(&mut h[..], &mut dh[..]), Duplicated::new(&xv, &mut dxv))?;
    Ok(())
}

fn main() {}
