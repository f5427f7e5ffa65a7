//! The seed's round trip: `f(x) = sum(abs2, to_host(to_device(x)))`, so `df/dx = 2x` exactly.
//!
//! Runs on the GPU when a CUDA driver and device are present, on host memory otherwise, and says
//! which. Both copies are user-written primitives annotated with `#[derivative_rule(copy)]`.
//!
//!     cargo run --example round_trip

use rules_runtime::{Duplicated, derivative_rule};

/// "Upload": on host memory, a copy into another host buffer.
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
    println!("memory: host (pageable)");
    let dx = host_round_trip(&x)?;
    let expected: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    println!("dx       = {dx:?}");
    println!("expected = {expected:?}");
    println!("correct? = {}", dx == expected);
    if dx != expected {
        std::process::exit(1);
    }
    Ok(())
}
