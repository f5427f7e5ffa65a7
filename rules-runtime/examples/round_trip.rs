//! The seed's round trip: `f(x) = sum(abs2, to_host(to_device(x)))`, so `df/dx = 2x` exactly.
//!
//! Runs on the GPU when a CUDA driver and device are present, on host memory otherwise, and says
//! which. Both copies are user-written primitives annotated with `#[derivative_rule(copy)]`.
//!
//!     cargo run --example round_trip

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::{Duplicated, derivative_rule};
use std::sync::Arc;

/// Host → device: the primitive a user writes, on the copy's own stream.
#[derivative_rule(copy)]
fn upload(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    stream.memcpy_htod(src, dst)
}

/// Device → host.
#[derivative_rule(copy)]
fn download(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtoh(src, dst)
}

/// `sum(abs2, download(upload(x)))` on the GPU, reverse mode: returns dx.
fn gpu_round_trip(s: &Arc<CudaStream>, x: &[f32]) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let n = x.len();
    let mut dx = vec![0.0f32; n];
    let (mut d, mut dd) = (s.alloc_zeros::<f32>(n)?, s.alloc_zeros::<f32>(n)?);
    let (mut h, mut dh) = (vec![0.0f32; n], vec![0.0f32; n]);
    let t1 = upload_augmented_primal(
        s,
        Duplicated::new(&mut d, &mut dd),
        Duplicated::new(x, &mut dx[..]),
    )?;
    let t2 = download_augmented_primal(
        s,
        Duplicated::new(&mut h[..], &mut dh[..]),
        Duplicated::new(&d, &mut dd),
    )?;
    for (g, v) in dh.iter_mut().zip(&h) {
        *g += 2.0 * v;
    }
    download_reverse(
        t2,
        s,
        Duplicated::new(&mut h[..], &mut dh[..]),
        Duplicated::new(&d, &mut dd),
    )?;
    upload_reverse(
        t1,
        s,
        Duplicated::new(&mut d, &mut dd),
        Duplicated::new(x, &mut dx[..]),
    )?;
    s.synchronize()?;
    Ok(dx)
}

/// Without a GPU, "upload" is a copy into another host buffer.
#[derivative_rule(copy)]
fn to_device(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

/// "Download": the copy back.
#[derivative_rule(copy)]
fn to_host(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn host_round_trip(x: &[f32]) -> Result<Vec<f32>, rules_runtime::Error> {
    let n = x.len();
    let mut dx = vec![0.0f32; n];
    let (mut d, mut dd) = (vec![0.0f32; n], vec![0.0f32; n]);
    let (mut h, mut dh) = (vec![0.0f32; n], vec![0.0f32; n]);
    // Forward sweep (augmented primals), keeping the tapes.
    let t1 = to_device_augmented_primal(
        Duplicated::new(&mut d[..], &mut dd[..]),
        Duplicated::new(x, &mut dx[..]),
    )?;
    let t2 = to_host_augmented_primal(
        Duplicated::new(&mut h[..], &mut dh[..]),
        Duplicated::new(&d[..], &mut dd[..]),
    )?;
    // sum(abs2, h): its gradient seeds the cotangent of h.
    for (g, v) in dh.iter_mut().zip(&h) {
        *g += 2.0 * v;
    }
    // Reverse sweep, in the opposite order.
    to_host_reverse(
        t2,
        Duplicated::new(&mut h[..], &mut dh[..]),
        Duplicated::new(&d[..], &mut dd[..]),
    )?;
    to_device_reverse(
        t1,
        Duplicated::new(&mut d[..], &mut dd[..]),
        Duplicated::new(x, &mut dx[..]),
    )?;
    Ok(dx)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let x = [1.0f32, 2.0, 3.0];
    let dx = match rules_runtime::cuda::stream(0) {
        Ok(s) => {
            println!(
                "memory: device ({}), through pageable host memory",
                s.context().name()?
            );
            gpu_round_trip(&s, &x)?
        }
        Err(why) => {
            println!("memory: host (pageable) -- no GPU: {why}");
            host_round_trip(&x)?
        }
    };
    let expected: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    println!("dx       = {dx:?}");
    println!("expected = {expected:?}");
    println!("correct? = {}", dx == expected);
    if dx != expected {
        std::process::exit(1);
    }
    Ok(())
}
