//! The seed's round trip: `f(x) = sum(abs2, to_host(to_device(x)))`, so `df/dx = 2x` exactly.
//!
//! Runs on the GPU when a CUDA driver and device are present, on host memory otherwise, and says
//! which.
//!
//!     cargo run --example round_trip
//!
//! Both copies are primitives written as a user writes them, once, in this crate's library
//! (`tests/src/lib.rs`), where the GPU suites use them too:
//!
//!     #[derivative_rule(copy)]
//!     pub fn upload<T: Differentiable + DeviceRepr>(
//!         stream: &Arc<CudaStream>,
//!         #[dst] dst: &mut CudaSlice<T>,
//!         #[src] src: &[T],
//!     ) -> Result<(), DriverError> {
//!         same_len(dst.len(), src.len())?; // CUDA_ERROR_INVALID_VALUE, not cudarc's panic
//!         stream.memcpy_htod(src, dst)
//!     }
//!
//! and `download` the other way (`memcpy_dtoh`). The attribute generates the rule object
//! `upload_rule` beside it; this program calls its `augmented_primal` and `reverse`.

use rules_runtime::CopyRule;
use rules_runtime::Duplicated;
use rules_runtime::cudarc::driver::CudaStream;
use rules_tests::{copy_slice_rule, download_rule, upload_rule};
use std::sync::Arc;

/// `sum(abs2, download(upload(x)))` on the GPU, reverse mode: returns dx.
fn gpu_round_trip(s: &Arc<CudaStream>, x: &[f32]) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let n = x.len();
    let mut dx = vec![0.0f32; n];
    let (mut d, mut dd) = (s.alloc_zeros::<f32>(n)?, s.alloc_zeros::<f32>(n)?);
    let (mut h, mut dh) = (vec![0.0f32; n], vec![0.0f32; n]);
    // Forward sweep (augmented primals), keeping the tapes.
    let t1 = upload_rule(s).augmented_primal(
        Duplicated::new(&mut d, &mut dd),
        Duplicated::new(x, &mut dx[..]),
    )?;
    let t2 = download_rule(s).augmented_primal(
        Duplicated::new(&mut h[..], &mut dh[..]),
        Duplicated::new(&d, &mut dd),
    )?;
    // sum(abs2, h): its gradient seeds the cotangent of h.
    for (g, v) in dh.iter_mut().zip(&h) {
        *g += 2.0 * v;
    }
    // Reverse sweep, in the opposite order, on the copies' stream.
    download_rule(s).reverse(
        t2,
        Duplicated::new(&mut h[..], &mut dh[..]),
        Duplicated::new(&d, &mut dd),
    )?;
    upload_rule(s).reverse(
        t1,
        Duplicated::new(&mut d, &mut dd),
        Duplicated::new(x, &mut dx[..]),
    )?;
    s.synchronize()?;
    Ok(dx)
}

/// Without a GPU, "upload" and "download" are copies between host buffers (`copy_slice`, the
/// library's slice copy).
fn host_round_trip(x: &[f32]) -> Result<Vec<f32>, rules_runtime::Error> {
    let n = x.len();
    let mut dx = vec![0.0f32; n];
    let (mut d, mut dd) = (vec![0.0f32; n], vec![0.0f32; n]);
    let (mut h, mut dh) = (vec![0.0f32; n], vec![0.0f32; n]);
    // Forward sweep (augmented primals), keeping the tapes.
    let t1 = copy_slice_rule().augmented_primal(
        Duplicated::new(&mut d[..], &mut dd[..]),
        Duplicated::new(x, &mut dx[..]),
    )?;
    let t2 = copy_slice_rule().augmented_primal(
        Duplicated::new(&mut h[..], &mut dh[..]),
        Duplicated::new(&d[..], &mut dd[..]),
    )?;
    // sum(abs2, h): its gradient seeds the cotangent of h.
    for (g, v) in dh.iter_mut().zip(&h) {
        *g += 2.0 * v;
    }
    // Reverse sweep, in the opposite order.
    copy_slice_rule().reverse(
        t2,
        Duplicated::new(&mut h[..], &mut dh[..]),
        Duplicated::new(&d[..], &mut dd[..]),
    )?;
    copy_slice_rule().reverse(
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
