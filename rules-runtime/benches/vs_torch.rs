//! The large-n device rows that `tools/torch-compare/compare.py` measures for PyTorch, timed the
//! same way, so that the two tables can be set side by side from one device call:
//!
//!     python3 tools/torch-compare/compare.py; cargo bench -p rules-runtime --features testing --bench vs_torch
//!
//! For f32, bf16 and f16 at n = 16M, 64M and 256M: the D2D copy (cuMemcpy), `accumulate` (PyTorch's
//! `y.add_(x)`), `accumulate_and_zero` (`y.add_(x); x.zero_()`) and `zero` (`x.zero_()`). CUDA events
//! around k back-to-back calls (k = 20 below 64 MiB moved per call, 4 below 1 GiB, 1 above), three
//! warm-up calls, median of 21, per call. GB/s counts bytes read plus written (copy 2n, add 3n,
//! add + zero 4n, zero n elements); "/ D2D f32" is bandwidth over the f32 copy of the same n (the
//! shadow_ops bench's ratio), "/ D2D same" over the same dtype's copy.

use half::{bf16, f16};
use rules_runtime::cudarc::driver::{CudaStream, DeviceRepr};
use rules_runtime::{Differentiable, On, accumulate, accumulate_and_zero, zero};
use std::collections::HashMap;
use std::sync::Arc;

mod common;

type R<T> = Result<T, Box<dyn std::error::Error>>;

fn time_us(s: &Arc<CudaStream>, moved: usize, f: impl FnMut() -> R<()>) -> R<f64> {
    let k = if moved >= 1 << 30 {
        1
    } else if moved >= 64 << 20 {
        4
    } else {
        20
    };
    common::median_us_k(s, k, 21, f)
}

fn dtype<T: Differentiable + DeviceRepr>(
    s: &Arc<CudaStream>,
    d2d_f32: &mut HashMap<usize, f64>,
) -> R<()> {
    let on = On::stream(s);
    let size = size_of::<T>();
    for n in [1usize << 24, 1 << 26, 1 << 28] {
        let x0 = common::random::<T, rules_runtime::cudarc::driver::DriverError>(s, n, 1)?;
        let mut x = common::random::<T, rules_runtime::cudarc::driver::DriverError>(s, n, 2)?;
        let mut y = common::random::<T, rules_runtime::cudarc::driver::DriverError>(s, n, 3)?;
        let copy = time_us(s, 2 * n * size, || Ok(s.memcpy_dtod(&x0, &mut y)?))?;
        let add = time_us(s, 3 * n * size, || Ok(accumulate(on, &mut y, &x)?))?;
        let add_zero = time_us(s, 4 * n * size, || {
            Ok(accumulate_and_zero(on, &mut y, &mut x)?)
        })?;
        let zero_us = time_us(s, n * size, || Ok(zero(on, &mut x)?))?;
        let bw = |m: usize, us: f64| (m * n * size) as f64 / us / 1e3;
        let d2d = bw(2, copy);
        if T::DTYPE.name() == "f32" {
            d2d_f32.insert(n, d2d);
        }
        let name = T::DTYPE.name();
        println!("| {name} | {n} | D2D copy | {copy:.1} | {d2d:.0} | | |");
        for (op, m, us) in [
            ("accumulate", 3, add),
            ("accumulate_and_zero", 4, add_zero),
            ("zero", 1, zero_us),
        ] {
            let r_f32 = if op == "accumulate" {
                format!("{:.3}", bw(m, us) / d2d_f32[&n])
            } else {
                String::new()
            };
            println!(
                "| {name} | {n} | {op} | {us:.1} | {:.0} | {r_f32} | {:.3} |",
                bw(m, us),
                bw(m, us) / d2d
            );
        }
    }
    Ok(())
}

fn main() -> R<()> {
    let ctx = match rules_runtime::cuda::context(0) {
        Ok(c) => c,
        Err(e) => {
            println!("vs_torch bench skipped: no usable GPU ({e})");
            return Ok(());
        }
    };
    let s = ctx.default_stream();
    println!("device: {}", ctx.name()?);
    println!("\n| dtype | n | op | us/call | GB/s | / D2D f32 (bench ratio) | / D2D same dtype |");
    println!("|---|---|---|---|---|---|---|");
    let mut d2d_f32 = HashMap::new();
    dtype::<f32>(&s, &mut d2d_f32)?;
    dtype::<bf16>(&s, &mut d2d_f32)?;
    dtype::<f16>(&s, &mut d2d_f32)?;
    Ok(())
}
