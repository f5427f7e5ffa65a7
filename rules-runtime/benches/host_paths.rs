//! The reverses of copies with host memory against their forwards, n = 64M f32 (256 MiB):
//! for each memory kind on the far side of a device buffer, both copy directions.
//!
//!     cargo bench -p rules-runtime --features testing --bench host_paths      (on a GPU machine)
//!
//! A copy `dst ← src` has the reverse `d_src += d_dst; d_dst ← 0` (`accumulate_and_zero`). Both
//! are timed by the host's clock around the call and a synchronisation of the stream (the host
//! routes do host work that device events would not see), after warm-up, median of the
//! repetitions. The forward is the copy itself, as cudarc does it. Target: reverse ≤ 1.2× forward.

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, HostSlice};
use rules_runtime::{On, ShadowMemory, accumulate, accumulate_and_zero};
use std::sync::Arc;
use std::time::Instant;

mod common;

type R<T> = Result<T, Box<dyn std::error::Error>>;

const N: usize = 1 << 26;
const REPS: usize = 9;

/// Median wall time of `f` followed by a synchronisation of `s`, in µs, after two warm-up calls.
fn wall_us(s: &Arc<CudaStream>, mut f: impl FnMut() -> R<()>) -> R<f64> {
    for _ in 0..2 {
        f()?;
    }
    s.synchronize()?;
    let mut t = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let t0 = Instant::now();
        f()?;
        s.synchronize()?;
        t.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[REPS / 2])
}

fn row(kind: &str, direction: &str, fwd: f64, rev: f64) {
    let gbs = (N * 4) as f64 / fwd / 1e3;
    println!(
        "| {kind} | {direction} | {fwd:.0} | {gbs:.1} | {rev:.0} | {:.2} |",
        rev / fwd
    );
}

/// Forward and reverse of `device → far` and `far → device` for one far memory kind.
fn pair<F>(s: &Arc<CudaStream>, kind: &str, far: &mut F, dev: &mut CudaSlice<f32>) -> R<()>
where
    F: ShadowMemory<Elem = f32> + HostSlice<f32> + ?Sized,
{
    let on = On::stream(s);
    let fwd = wall_us(s, || Ok(s.memcpy_dtoh(&*dev, &mut *far)?))?;
    let rev = wall_us(s, || Ok(accumulate_and_zero(on, &mut *dev, &mut *far)?))?;
    row(kind, "device → host", fwd, rev);
    let fwd = wall_us(s, || Ok(s.memcpy_htod(&*far, &mut *dev)?))?;
    let rev = wall_us(s, || Ok(accumulate_and_zero(on, &mut *far, &mut *dev)?))?;
    row(kind, "host → device", fwd, rev);
    Ok(())
}

fn main() -> R<()> {
    let ctx = match rules_runtime::cuda::context(0) {
        Ok(c) => c,
        Err(e) => {
            println!("host_paths bench skipped: no usable GPU ({e})");
            return Ok(());
        }
    };
    let s = ctx.default_stream();
    println!(
        "# reverse (d_src += d_dst; d_dst = 0) against its forward copy, f32, n = {N} ({} MiB), wall clock with a stream synchronisation, median of {REPS}",
        (N * 4) >> 20
    );
    println!(
        "host threads available: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!("\n| memory | copy | forward us | forward GB/s | reverse us | reverse / forward |");
    println!("|---|---|---|---|---|---|");
    let mut dev = common::random::<f32, rules_runtime::cudarc::driver::DriverError>(&s, N, 3)?;
    let mut pageable = vec![0.5f32; N];
    pair(&s, "pageable", &mut pageable[..], &mut dev)?;
    // SAFETY: written below before any read.
    let mut pinned = unsafe { ctx.alloc_pinned::<f32>(N) }?;
    pinned.as_mut_slice()?.fill(0.5);
    pair(&s, "pinned", &mut pinned, &mut dev)?;
    // The reverse's floor on this route: the accumulate kernel alone, reading the pinned shadow in
    // place over the link (the host's zeroing overlaps it, but for the last chunk).
    let on = On::stream(&s);
    let acc = wall_us(&s, || Ok(accumulate(on, &mut dev, &pinned)?))?;
    println!(
        "| pinned | (accumulate alone, device += pinned) | | | {acc:.0} | {:.2} of the device → host forward |",
        acc / wall_us(&s, || Ok(s.memcpy_dtoh(&dev, &mut pinned)?))?
    );
    drop(pinned);
    // cudarc's `alloc_pinned` is write-combined (host reads bypass the caches); page-locked memory
    // from other allocators (cudaMallocHost, PyTorch's pin_memory) is cached.
    let mut cached = unsafe { ctx.alloc_pinned_with_flags::<f32>(N, 0) }?;
    cached.as_mut_slice()?.fill(0.5);
    pair(&s, "pinned, cached", &mut cached, &mut dev)?;
    drop(cached);
    // SAFETY: as above.
    let mut unified = unsafe { ctx.alloc_unified::<f32>(N, true) }?;
    unified.as_mut_slice()?.fill(0.5);
    let on = On::stream(&s);
    let fwd = wall_us(&s, || Ok(s.memcpy_dtod(&dev, &mut unified)?))?;
    let rev = wall_us(&s, || Ok(accumulate_and_zero(on, &mut dev, &mut unified)?))?;
    row("unified", "device → unified", fwd, rev);
    let fwd = wall_us(&s, || Ok(s.memcpy_dtod(&unified, &mut dev)?))?;
    let rev = wall_us(&s, || Ok(accumulate_and_zero(on, &mut unified, &mut dev)?))?;
    row("unified", "unified → device", fwd, rev);
    Ok(())
}
