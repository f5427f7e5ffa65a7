//! Benchmark of the shadow operations against the ceilings measured in the same run.
//!
//!     cargo bench -p rules-runtime --features testing --bench shadow_ops      (on a GPU machine)
//!
//! CUDA events around each repetition of k back-to-back calls (k from 100 for small n down to 1
//! at 1 GiB), warm-up first, median of the repetitions, per call; random data (never zeros;
//! the source of `accumulate_and_zero` is zero after its first call, which the kernel's speed does
//! not depend on). Prints the ceilings (cuMemcpy device-to-device, memset, an empty launch, pinned
//! host↔device), then the table (dtype, n, ours, cuBLAS axpy, ratio), then fused
//! accumulate-and-zero against accumulate + memset, then reverses of copies involving host memory.
//! Bandwidth counts bytes read plus bytes written. cuBLAS is a bench dependency only.

use half::{bf16, f16};
use rules_runtime::cudarc::cublas::{CudaBlas, sys as blas};
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr};
use rules_runtime::testing::kernels;
use rules_runtime::{Differentiable, On, accumulate, accumulate_and_zero, zero};
use std::sync::Arc;

mod common;

/// [`common::median_us_k`] for this bench's error type.
fn median_us_k(s: &Arc<CudaStream>, k: usize, reps: usize, f: impl FnMut() -> R<()>) -> R<f64> {
    common::median_us_k(s, k, reps, f)
}

type R<T> = Result<T, Box<dyn std::error::Error>>;

/// [`median_us_k`] with the batch and repetition counts set by the bytes one call moves.
fn median_us(s: &Arc<CudaStream>, bytes: usize, f: impl FnMut() -> R<()>) -> R<f64> {
    let k = if bytes >= 1 << 30 {
        1
    } else if bytes >= 64 << 20 {
        4
    } else if bytes >= 1 << 20 {
        20
    } else {
        100
    };
    let reps = if bytes >= 1 << 30 { 15 } else { 31 };
    median_us_k(s, k, reps, f)
}

/// [`common::random`] for this bench's error type.
fn random<T: Differentiable + DeviceRepr>(
    s: &Arc<CudaStream>,
    n: usize,
    seed: u64,
) -> R<CudaSlice<T>> {
    common::random(s, n, seed)
}

const SIZES: [usize; 9] = [1, 16, 256, 4096, 65536, 1 << 20, 1 << 24, 1 << 26, 1 << 28];

fn gbs(bytes: f64, us: f64) -> f64 {
    bytes / us / 1e3
}

fn main() -> R<()> {
    let ctx = match rules_runtime::cuda::context(0) {
        Ok(c) => c,
        Err(e) => {
            println!("no GPU ({e}): nothing to measure");
            return Ok(());
        }
    };
    // The context's default stream, and no other stream until the last section: cudarc then does
    // no cross-stream event bookkeeping, which the last section measures on its own.
    let s = ctx.default_stream();
    println!("device: {}", ctx.name()?);
    println!(
        "timing: CUDA events around k back-to-back calls (k = 100 / 20 / 4 / 1 by size), median of 31 (15) repetitions, per call"
    );

    // ---- Ceilings ----
    println!("\n## ceilings (same run)");
    let mut d2d = Vec::new();
    for n in [1usize << 24, 1 << 26, 1 << 28] {
        let bytes = n * 4;
        let a = random::<f32>(&s, n, 1)?;
        let mut b = random::<f32>(&s, n, 2)?;
        let us = median_us(&s, 2 * bytes, || Ok(s.memcpy_dtod(&a, &mut b)?))?;
        let bw = gbs(2.0 * bytes as f64, us);
        d2d.push((n, bw));
        println!("cuMemcpy D2D  n={n:>10}  {us:>9.1} us  {bw:>7.0} GB/s (read + write)");
    }
    let n = 1 << 28;
    let mut b = random::<f32>(&s, n, 3)?;
    let us = median_us(&s, n * 4, || Ok(s.memset_zeros(&mut b)?))?;
    println!(
        "memset        n={n:>10}  {us:>9.1} us  {:>7.0} GB/s",
        gbs(n as f64 * 4.0, us)
    );
    let empty_us = median_us(&s, 0, || Ok(kernels::empty_launch(&s)?))?;
    let empty_single = median_us_k(&s, 1, 101, || Ok(kernels::empty_launch(&s)?))?;
    println!(
        "empty launch  {empty_us:>9.2} us back to back, {empty_single:.2} us alone (event-timed single launch)"
    );
    let mut small = random::<f32>(&s, 4096, 16)?;
    let (small_ptr, _g) = small.device_ptr_mut(&s);
    for bytes in [4usize, 1024, 16384] {
        let us = median_us(&s, 0, || unsafe {
            Ok(kernels::zero(&s, small_ptr, bytes)?)
        })?;
        println!("memset {bytes:>6} B  {us:>6.2} us back to back");
    }
    let pn = 1 << 26;
    let mut pinned = unsafe { ctx.alloc_pinned::<f32>(pn) }?;
    pinned.as_mut_slice()?.fill(0.25);
    let mut dev = random::<f32>(&s, pn, 4)?;
    let h2d = median_us_k(&s, 1, 11, || Ok(s.memcpy_htod(&pinned, &mut dev)?))?;
    let d2h = median_us_k(&s, 1, 11, || Ok(s.memcpy_dtoh(&dev, &mut pinned)?))?;
    let pin_bw = gbs(pn as f64 * 4.0, h2d).min(gbs(pn as f64 * 4.0, d2h));
    println!(
        "pinned H2D {:>6.1} GB/s, D2H {:>6.1} GB/s (256 MiB)",
        gbs(pn as f64 * 4.0, h2d),
        gbs(pn as f64 * 4.0, d2h)
    );

    // ---- Accumulate vs cuBLAS axpy ----
    println!("\n## accumulate y += x (bytes: 2 reads + 1 write)");
    println!(
        "| dtype | n | ours us | ours GB/s | cuBLAS us | ratio (cuBLAS/ours time) | ours / empty launch | vs D2D bw |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let blas = CudaBlas::new(s.clone())?;
    bench_acc::<f32>(&s, &blas, "f32", empty_us, &d2d)?;
    bench_acc::<f64>(&s, &blas, "f64", empty_us, &d2d)?;
    bench_acc::<f16>(&s, &blas, "f16", empty_us, &d2d)?;
    bench_acc::<bf16>(&s, &blas, "bf16", empty_us, &d2d)?;
    bench_acc_c32(&s, &blas, empty_us)?;

    println!(
        "\n## small n, one call alone (event-timed single call, f32): ours / empty launch alone"
    );
    for n in [1usize, 4096, 65536] {
        let mut y = random::<f32>(&s, n, 12)?;
        let x = random::<f32>(&s, n, 13)?;
        let us = median_us_k(&s, 1, 101, || Ok(accumulate(On::stream(&s), &mut y, &x)?))?;
        let (xp, _gx) = x.device_ptr(&s);
        let (yp, _gy) = y.device_ptr_mut(&s);
        let h = *blas.handle();
        let b = median_us_k(&s, 1, 101, || unsafe {
            Ok(blas::cublasSaxpy_v2(h, n as i32, &1.0f32, xp as _, 1, yp as _, 1).result()?)
        })?;
        println!(
            "n={n:>6}: ours {us:.2} us = {:.2}x the empty launch alone; cuBLAS saxpy alone {b:.2} us",
            us / empty_single
        );
    }

    // ---- Fused ----
    println!(
        "\n## accumulate_and_zero vs accumulate + memset (f32); the operation splits into kernel + memset from {} MiB per operand",
        rules_runtime::ops::FUSED_SPLIT_BYTES >> 20
    );
    println!(
        "| n | accumulate_and_zero us | acc + memset us | speed-up | fused kernel alone us | its speed-up |"
    );
    println!("|---|---|---|---|---|---|");
    let mut fused_sizes = SIZES.to_vec();
    fused_sizes.extend([1 << 22, 1 << 23]);
    fused_sizes.sort_unstable();
    for n in fused_sizes {
        let mut a = random::<f32>(&s, n, 5)?;
        let mut b = random::<f32>(&s, n, 6)?;
        let on = On::stream(&s);
        let bytes = 4 * n * 4;
        // Best of two rounds for each, as above.
        let (mut op, mut two) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..2 {
            op = op.min(median_us(&s, bytes, || {
                Ok(accumulate_and_zero(on, &mut a, &mut b)?)
            })?);
            two = two.min(median_us(&s, bytes, || {
                accumulate(on, &mut a, &b)?;
                Ok(zero(on, &mut b)?)
            })?);
        }
        let (ap, bp) = {
            let (x, _g) = a.device_ptr_mut(&s);
            let (y, _h) = b.device_ptr_mut(&s);
            (x, y)
        };
        let kernel = median_us(&s, bytes, || unsafe {
            Ok(kernels::accumulate(
                &s,
                rules_runtime::Dtype::F32,
                ap,
                bp,
                n,
                true,
            )?)
        })?;
        println!(
            "| {n} | {op:.2} | {two:.2} | {:.2}x | {kernel:.2} | {:.2}x |",
            two / op,
            two / kernel
        );
    }

    // ---- Reverses involving host memory ----
    println!("\n## reverse of copies with host memory (f32, n = 64M): d_src += d_dst; d_dst = 0");
    let n = 1 << 26;
    let on = On::stream(&s);
    let mut ddev = random::<f32>(&s, n, 7)?;
    let mut dpin = unsafe { ctx.alloc_pinned::<f32>(n) }?;
    dpin.as_mut_slice()?.fill(0.5);
    let once = |f: &mut dyn FnMut() -> R<()>| median_us_k(&s, 1, 5, f);
    let us = once(&mut || Ok(accumulate_and_zero(on, &mut ddev, &mut dpin)?))?;
    println!(
        "device->pinned copy reverse (device += pinned; pinned = 0): {us:.0} us, {:.1} GB/s over the link (read + write of pinned), {:.2} of pinned bandwidth",
        gbs(2.0 * n as f64 * 4.0, us),
        gbs(2.0 * n as f64 * 4.0, us) / pin_bw
    );
    let fwd = once(&mut || Ok(s.memcpy_dtoh(&ddev, &mut dpin)?))?;
    println!(
        "  its forward (the device -> pinned copy): {fwd:.0} us; reverse / forward = {:.2}",
        us / fwd
    );
    let us = once(&mut || Ok(accumulate_and_zero(on, &mut dpin, &mut ddev)?))?;
    println!(
        "pinned->device copy reverse (pinned += device; device = 0): {us:.0} us, {:.1} GB/s over the link",
        gbs(2.0 * n as f64 * 4.0, us)
    );
    let mut host = vec![0.5f32; n];
    let us = once(&mut || Ok(accumulate_and_zero(on, &mut ddev, &mut host[..])?))?;
    println!(
        "device->pageable copy reverse (device += pageable; pageable = 0): {us:.0} us, {:.1} GB/s of pageable data",
        gbs(n as f64 * 4.0, us)
    );
    let us = once(&mut || Ok(accumulate_and_zero(on, &mut host[..], &mut ddev)?))?;
    println!(
        "pageable->device copy reverse (pageable += device; device = 0): {us:.0} us, {:.1} GB/s of pageable data",
        gbs(n as f64 * 4.0, us)
    );
    let mut uni = unsafe { ctx.alloc_unified::<f32>(n, true) }?;
    uni.as_mut_slice()?.fill(0.5);
    let us = once(&mut || Ok(accumulate_and_zero(on, &mut ddev, &mut uni)?))?;
    println!(
        "device->unified copy reverse (device += unified; unified = 0): {us:.0} us, {:.1} GB/s (read + write)",
        gbs(3.0 * n as f64 * 4.0, us)
    );

    // ---- cudarc's event tracking (a second stream exists) ----
    let _second = ctx.new_stream()?;
    let s2 = ctx.new_stream()?;
    let mut y = random::<f32>(&s2, 1, 14)?;
    let x = random::<f32>(&s2, 1, 15)?;
    let us = median_us(&s2, 0, || Ok(accumulate(On::stream(&s2), &mut y, &x)?))?;
    let empty2 = median_us(&s2, 0, || Ok(kernels::empty_launch(&s2)?))?;
    println!(
        "\n## with several streams (cudarc orders each CudaSlice use with event waits and records)\nf32 n=1 accumulate: {us:.2} us back to back, {:.2}x an empty launch ({empty2:.2} us) on that stream",
        us / empty2
    );
    Ok(())
}

fn bench_acc<T: Differentiable + DeviceRepr>(
    s: &Arc<CudaStream>,
    blas: &CudaBlas,
    name: &str,
    empty_us: f64,
    d2d: &[(usize, f64)],
) -> R<()> {
    for n in SIZES {
        let bytes = n * size_of::<T>();
        if bytes > 2 << 30 {
            continue;
        }
        let mut y = random::<T>(s, n, 8)?;
        let x = random::<T>(s, n, 9)?;
        // Rounds of (empty launch, ours, cuBLAS), the best median of each: the GPU's run-to-run
        // drift at large n can exceed the difference between kernel variants, and the host's
        // launch rate drifts by as much; the launch ceiling is measured next to the small sizes.
        let small = n <= 65536;
        let (mut ours, mut blas_us, mut empty) = (f64::INFINITY, None::<f64>, f64::INFINITY);
        for _ in 0..if small { 3 } else { 2 } {
            if small {
                empty = empty.min(median_us(s, 0, || Ok(kernels::empty_launch(s)?))?);
            }
            let t = median_us(s, 3 * bytes, || Ok(accumulate(On::stream(s), &mut y, &x)?))?;
            ours = ours.min(t);
            if let Some(b) = axpy::<T>(s, blas, &mut y, &x, n, 3 * bytes)? {
                blas_us = Some(blas_us.map_or(b, |a| a.min(b)));
            }
        }
        let empty_us = if small { empty } else { empty_us };
        let bw = gbs(3.0 * bytes as f64, ours);
        let vs_d2d = d2d
            .iter()
            .find(|(m, _)| *m == n)
            .map_or(String::from("-"), |(_, c)| format!("{:.3}", bw / c));
        let blas_col = blas_us.map_or(("n/a".to_string(), "-".to_string()), |b| {
            (format!("{b:.2}"), format!("{:.2}", b / ours))
        });
        println!(
            "| {name} | {n} | {ours:.2} | {bw:.0} | {} | {} | {:.2} | {vs_d2d} |",
            blas_col.0,
            blas_col.1,
            ours / empty_us
        );
    }
    Ok(())
}

fn axpy<T: Differentiable>(
    s: &Arc<CudaStream>,
    blas: &CudaBlas,
    y: &mut CudaSlice<T>,
    x: &CudaSlice<T>,
    n: usize,
    bytes: usize,
) -> R<Option<f64>> {
    let h = *blas.handle();
    let (xp, _g1) = x.device_ptr(s);
    let (yp, _g2) = y.device_ptr_mut(s);
    let n = n as i32;
    let run = || -> R<()> {
        unsafe {
            match T::DTYPE {
                rules_runtime::Dtype::F32 => {
                    blas::cublasSaxpy_v2(h, n, &1.0f32, xp as _, 1, yp as _, 1).result()?
                }
                rules_runtime::Dtype::F64 => {
                    blas::cublasDaxpy_v2(h, n, &1.0f64, xp as _, 1, yp as _, 1).result()?
                }
                rules_runtime::Dtype::C32 => {
                    let one = blas::cuComplex { x: 1.0, y: 0.0 };
                    blas::cublasCaxpy_v2(h, n, &one, xp as _, 1, yp as _, 1).result()?
                }
                _ => {}
            }
        }
        Ok(())
    };
    if !matches!(
        T::DTYPE,
        rules_runtime::Dtype::F32 | rules_runtime::Dtype::F64 | rules_runtime::Dtype::C32
    ) {
        return Ok(None);
    }
    Ok(Some(median_us(s, bytes, run)?))
}

fn bench_acc_c32(s: &Arc<CudaStream>, blas: &CudaBlas, empty_us: f64) -> R<()> {
    for n in SIZES {
        let bytes = n * 8;
        if bytes > 2 << 30 {
            continue;
        }
        let mut yr = random::<f32>(s, 2 * n, 10)?;
        let xr = random::<f32>(s, 2 * n, 11)?;
        let r = 3 * bytes;
        let (yp, xp) = {
            let (a, _g) = yr.device_ptr_mut(s);
            let (b, _h) = xr.device_ptr(s);
            (a, b)
        };
        let h = *blas.handle();
        let one = blas::cuComplex { x: 1.0, y: 0.0 };
        let small = n <= 65536;
        let (mut ours, mut b, mut empty) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
        for _ in 0..if small { 3 } else { 2 } {
            if small {
                empty = empty.min(median_us(s, 0, || Ok(kernels::empty_launch(s)?))?);
            }
            ours = ours.min(median_us(s, r, || unsafe {
                Ok(kernels::accumulate(
                    s,
                    rules_runtime::Dtype::C32,
                    yp,
                    xp,
                    n,
                    false,
                )?)
            })?);
            b = b.min(median_us(s, r, || unsafe {
                Ok(blas::cublasCaxpy_v2(h, n as i32, &one, xp as _, 1, yp as _, 1).result()?)
            })?);
        }
        let empty_us = if small { empty } else { empty_us };
        let bw = gbs(3.0 * bytes as f64, ours);
        println!(
            "| c32 | {n} | {ours:.2} | {bw:.0} | {b:.2} | {:.2} | {:.2} | - |",
            b / ours,
            ours / empty_us
        );
    }
    Ok(())
}
