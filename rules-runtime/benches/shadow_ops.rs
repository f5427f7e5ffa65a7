//! Benchmark of the shadow operations against the ceilings measured in the same run.
//!
//!     cargo bench -p rules-runtime --bench shadow_ops      (on a GPU machine)
//!
//! CUDA events around each repetition, warm-up first, median of the repetitions, random data
//! (never zeros). Prints the ceilings (cuMemcpy device-to-device, memset, an empty launch, pinned
//! host↔device), then the seed-style table (dtype, n, ours, cuBLAS axpy, ratio), then fused
//! accumulate-and-zero against accumulate + memset, then reverses of copies involving host memory.
//! Bandwidth counts bytes read plus bytes written. cuBLAS is a bench dependency only.

use half::{bf16, f16};
use rules_runtime::cudarc::cublas::{CudaBlas, sys as blas};
use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, sys,
};
use rules_runtime::{Differentiable, On, accumulate, accumulate_and_zero, kernels, zero};
use std::sync::Arc;

type R<T> = Result<T, Box<dyn std::error::Error>>;

fn median_us(s: &Arc<CudaStream>, reps: usize, mut f: impl FnMut() -> R<()>) -> R<f64> {
    for _ in 0..3 {
        f()?;
    }
    s.synchronize()?;
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (a, b) = (
        s.context().new_event(timing)?,
        s.context().new_event(timing)?,
    );
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        a.record(s)?;
        f()?;
        b.record(s)?;
        b.synchronize()?;
        t.push(f64::from(a.elapsed_ms(&b)?) * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[reps / 2])
}

fn reps(bytes: usize) -> usize {
    if bytes >= 1 << 30 {
        10
    } else if bytes >= 1 << 26 {
        20
    } else {
        50
    }
}

/// Random device data of `n` elements (a cheap generator: the values only need to be non-zero).
fn random<T: Differentiable + DeviceRepr>(
    s: &Arc<CudaStream>,
    n: usize,
    seed: u64,
) -> R<CudaSlice<T>> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let host: Vec<T> = (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((x >> 40) as f64 / (1u64 << 24) as f64) * 2.0 - 1.0;
            T::from_parts([v / 64.0 + 1e-3, v / 128.0])
        })
        .collect();
    Ok(s.clone_htod(&host)?)
}

const SIZES: [usize; 9] = [1, 16, 256, 4096, 65536, 1 << 20, 1 << 24, 1 << 26, 1 << 28];

fn gbs(bytes: f64, us: f64) -> f64 {
    bytes / us / 1e3
}

fn main() -> R<()> {
    let s = match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => {
            println!("no GPU ({e}): nothing to measure");
            return Ok(());
        }
    };
    println!("device: {}", s.context().name()?);

    // ---- Ceilings ----
    println!("\n## ceilings (same run)");
    let mut d2d = Vec::new();
    for n in [1usize << 24, 1 << 26, 1 << 28] {
        let bytes = n * 4;
        let a = random::<f32>(&s, n, 1)?;
        let mut b = random::<f32>(&s, n, 2)?;
        let us = median_us(&s, reps(bytes), || Ok(s.memcpy_dtod(&a, &mut b)?))?;
        let bw = gbs(2.0 * bytes as f64, us);
        d2d.push((n, bw));
        println!("cuMemcpy D2D  n={n:>10}  {us:>9.1} us  {bw:>7.0} GB/s (read + write)");
    }
    let n = 1 << 28;
    let mut b = random::<f32>(&s, n, 3)?;
    let us = median_us(&s, 10, || Ok(s.memset_zeros(&mut b)?))?;
    println!(
        "memset        n={n:>10}  {us:>9.1} us  {:>7.0} GB/s",
        gbs(n as f64 * 4.0, us)
    );
    let empty_us = median_us(&s, 200, || Ok(kernels::empty_launch(&s)?))?;
    println!("empty launch  {empty_us:>9.2} us (event-timed, one launch)");
    let pn = 1 << 26;
    let mut pinned = unsafe { s.context().alloc_pinned::<f32>(pn) }?;
    pinned.as_mut_slice()?.fill(0.25);
    let mut dev = random::<f32>(&s, pn, 4)?;
    let h2d = median_us(&s, 10, || Ok(s.memcpy_htod(&pinned, &mut dev)?))?;
    let d2h = median_us(&s, 10, || Ok(s.memcpy_dtoh(&dev, &mut pinned)?))?;
    let pin_bw = gbs(pn as f64 * 4.0, h2d).min(gbs(pn as f64 * 4.0, d2h));
    println!(
        "pinned H2D {:>6.1} GB/s, D2H {:>6.1} GB/s (256 MiB)",
        gbs(pn as f64 * 4.0, h2d),
        gbs(pn as f64 * 4.0, d2h)
    );

    // ---- Accumulate vs cuBLAS axpy ----
    println!("\n## accumulate y += x (bytes: 2 reads + 1 write)");
    println!(
        "| dtype | n | ours us | ours GB/s | cuBLAS us | ratio (cuBLAS/ours time) | vs empty launch | vs D2D bw |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let blas = CudaBlas::new(s.clone())?;
    bench_acc::<f32>(&s, &blas, "f32", empty_us, &d2d)?;
    bench_acc::<f64>(&s, &blas, "f64", empty_us, &d2d)?;
    bench_acc::<f16>(&s, &blas, "f16", empty_us, &d2d)?;
    bench_acc::<bf16>(&s, &blas, "bf16", empty_us, &d2d)?;
    bench_acc_c32(&s, &blas, empty_us)?;

    // ---- Fused ----
    println!("\n## fused accumulate_and_zero vs accumulate + memset (f32)");
    println!("| n | fused us | acc + memset us | speed-up |");
    println!("|---|---|---|---|");
    for n in SIZES {
        let mut a = random::<f32>(&s, n, 5)?;
        let mut b = random::<f32>(&s, n, 6)?;
        let on = On::stream(&s);
        let r = reps(n * 4);
        let fused = median_us(&s, r, || Ok(accumulate_and_zero(on, &mut a, &mut b)?))?;
        let two = median_us(&s, r, || {
            accumulate(on, &mut a, &b)?;
            Ok(zero(on, &mut b)?)
        })?;
        println!("| {n} | {fused:.2} | {two:.2} | {:.2}x |", two / fused);
    }

    // ---- Reverses involving host memory ----
    println!("\n## reverse of copies with host memory (f32, n = 64M): d_src += d_dst; d_dst = 0");
    let n = 1 << 26;
    let on = On::stream(&s);
    let mut ddev = random::<f32>(&s, n, 7)?;
    let mut dpin = unsafe { s.context().alloc_pinned::<f32>(n) }?;
    dpin.as_mut_slice()?.fill(0.5);
    let us = median_us(&s, 5, || Ok(accumulate_and_zero(on, &mut ddev, &mut dpin)?))?;
    println!(
        "device->pinned copy reverse (device += pinned; pinned = 0): {us:.0} us, {:.1} GB/s over the link (read + write of pinned), {:.2} of pinned bandwidth",
        gbs(2.0 * n as f64 * 4.0, us),
        gbs(2.0 * n as f64 * 4.0, us) / pin_bw
    );
    let us = median_us(&s, 5, || Ok(accumulate_and_zero(on, &mut dpin, &mut ddev)?))?;
    println!(
        "pinned->device copy reverse (pinned += device; device = 0): {us:.0} us, {:.1} GB/s over the link",
        gbs(2.0 * n as f64 * 4.0, us)
    );
    let mut host = vec![0.5f32; n];
    let us = median_us(&s, 5, || {
        Ok(accumulate_and_zero(on, &mut ddev, &mut host[..])?)
    })?;
    println!(
        "device->pageable copy reverse (device += pageable; pageable = 0): {us:.0} us, {:.1} GB/s of pageable data",
        gbs(n as f64 * 4.0, us)
    );
    let us = median_us(&s, 5, || {
        Ok(accumulate_and_zero(on, &mut host[..], &mut ddev)?)
    })?;
    println!(
        "pageable->device copy reverse (pageable += device; device = 0): {us:.0} us, {:.1} GB/s of pageable data",
        gbs(n as f64 * 4.0, us)
    );
    let mut uni = unsafe { s.context().alloc_unified::<f32>(n, true) }?;
    uni.as_mut_slice()?.fill(0.5);
    let us = median_us(&s, 5, || Ok(accumulate_and_zero(on, &mut ddev, &mut uni)?))?;
    println!(
        "device->unified copy reverse (device += unified; unified = 0): {us:.0} us, {:.1} GB/s (read + write)",
        gbs(3.0 * n as f64 * 4.0, us)
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
        let r = reps(bytes);
        let ours = median_us(s, r, || Ok(accumulate(On::stream(s), &mut y, &x)?))?;
        let blas_us = axpy::<T>(s, blas, &mut y, &x, n, r)?;
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
    reps: usize,
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
    Ok(Some(median_us(s, reps, run)?))
}

fn bench_acc_c32(s: &Arc<CudaStream>, blas: &CudaBlas, empty_us: f64) -> R<()> {
    for n in SIZES {
        let bytes = n * 8;
        if bytes > 2 << 30 {
            continue;
        }
        let mut yr = random::<f32>(s, 2 * n, 10)?;
        let xr = random::<f32>(s, 2 * n, 11)?;
        let r = reps(bytes);
        let (yp, xp) = {
            let (a, _g) = yr.device_ptr_mut(s);
            let (b, _h) = xr.device_ptr(s);
            (a, b)
        };
        let ours = median_us(s, r, || unsafe {
            Ok(kernels::accumulate(
                s,
                rules_runtime::Dtype::C32,
                yp,
                xp,
                n,
                false,
            )?)
        })?;
        let h = *blas.handle();
        let one = blas::cuComplex { x: 1.0, y: 0.0 };
        let b = median_us(s, r, || unsafe {
            Ok(blas::cublasCaxpy_v2(h, n as i32, &one, xp as _, 1, yp as _, 1).result()?)
        })?;
        let bw = gbs(3.0 * bytes as f64, ours);
        println!(
            "| c32 | {n} | {ours:.2} | {bw:.0} | {b:.2} | {:.2} | {:.2} | - |",
            b / ours,
            ours / empty_us
        );
    }
    Ok(())
}
