//! The cost of the checked mode (docs/checked.md): a device copy rule's forward and augmented
//! primal, built with and without the `checked` feature, against the bare copy (the ceiling), at
//! a few n (f32). Each figure is the median over repetitions of events around `k` calls back to
//! back, after a warm-up (`common::median_us_k`). Build and run it twice and compare the ratios:
//!
//! ```sh
//! cargo bench -p rules-runtime --features testing --bench checked
//! cargo bench -p rules-runtime --features testing,checked --bench checked
//! ```

mod common;

use common::{median_us_k, random};
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::{Const, CopyRule, Duplicated, derivative_rule};
use std::sync::Arc;

/// A device-to-device copy on the copy's stream.
#[derivative_rule(copy)]
fn copy_dev(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

type E = Box<dyn std::error::Error>;

fn main() -> Result<(), E> {
    let s = rules_runtime::cuda::stream(0)?;
    let mode = if cfg!(feature = "checked") {
        "checked"
    } else {
        "unchecked"
    };
    println!("mode: {mode}");
    println!("n | bare copy µs | forward µs | forward / bare | augmented primal µs | aug / bare");
    for n in [4096usize, 1 << 20, 64 << 20] {
        let x: CudaSlice<f32> = random::<f32, E>(&s, n, 1)?;
        let mut dx: CudaSlice<f32> = random::<f32, E>(&s, n, 2)?;
        let mut y = s.alloc_zeros::<f32>(n)?;
        let mut dy = s.alloc_zeros::<f32>(n)?;
        let (k, reps) = if n > 1 << 22 { (2, 15) } else { (20, 31) };
        let bare = median_us_k(&s, k, reps, || s.memcpy_dtod(&x, &mut y).map_err(E::from))?;
        let fwd = median_us_k(&s, k, reps, || {
            copy_dev_rule(&s)
                .forward(
                    Duplicated::new(&mut y, &mut dy),
                    Duplicated::new(&x, &mut dx),
                )
                .map_err(E::from)
        })?;
        let aug = median_us_k(&s, k, reps, || {
            copy_dev_rule(&s)
                .augmented_primal(Duplicated::new(&mut y, &mut dy), Const(&x))
                .map(drop)
                .map_err(E::from)
        })?;
        println!(
            "{n} | {bare:.2} | {fwd:.2} | {:.2} | {aug:.2} | {:.2}",
            fwd / bare,
            aug / bare
        );
    }
    Ok(())
}
