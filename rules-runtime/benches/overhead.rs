//! The host cost of one rule call at small n, beside the bare calls it wraps (issue 22).
//!
//!     cargo bench -p rules-runtime --features testing --bench overhead          (on a GPU machine)
//!     ... --features probe: the same, then the host time of each step of a call (`device::probe`)
//!
//! Every figure is the host's clock over 4000 calls after 200 warm-up calls, the stream
//! synchronised at the end, per call; the median of 5 repetitions. The bare calls (cudarc's copy,
//! memset, the driver's 2D copy and memset, one kernel launch) are timed in the same run, beside
//! the rules that wrap them. The stream is a `cuda::stream` (a second stream of the context), so
//! cudarc's event tracking is on, as in a program with several streams.
//!
//! The first call in a process is timed in child processes of this program (`--first CASE`):
//! each makes its context, then times its first call and its steady state.

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError};
use rules_runtime::cudarc::driver::{result, sys};
use rules_runtime::testing::kernels::empty_launch;
use rules_runtime::{Const, CopyRule, Duplicated, FillRule, MemsetRule, On, RegionRule};
use rules_runtime::{accumulate_and_zero, derivative_rule};
use std::sync::Arc;
use std::time::Instant;

type R<T> = Result<T, Box<dyn std::error::Error>>;

const CALLS: usize = 4000;
const WARM: usize = 200;
const REPS: usize = 5;

// ---- The primitives, as a user writes them --------------------------------------------------

/// Device → device (cudarc's copy).
#[derivative_rule(copy)]
fn d2d(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// Pageable → device.
#[derivative_rule(copy)]
fn upload(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    stream.memcpy_htod(src, dst)
}

/// Device → pageable.
#[derivative_rule(copy)]
fn download(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtoh(src, dst)
}

/// A 2D box device → device: one `cuMemcpy2DAsync`.
#[derivative_rule(copy2d)]
fn copy2d(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    let (s, _rs) = src.device_ptr(stream);
    let (d, _rd) = dst.device_ptr_mut(stream);
    // SAFETY: a plain-old-data struct of the driver, all zero is its empty value.
    let mut p: sys::CUDA_MEMCPY2D = unsafe { core::mem::zeroed() };
    p.srcMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
    p.srcDevice = s;
    p.srcPitch = spitch;
    p.dstMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
    p.dstDevice = d;
    p.dstPitch = dpitch;
    p.WidthInBytes = width * 4;
    p.Height = height;
    // SAFETY: both boxes lie in their buffers (the rule checked them; the bare calls use the same).
    unsafe { sys::cuMemcpy2DAsync_v2(&p, stream.cu_stream()) }.result()
}

/// A 2D box set to zero bytes: one `cuMemsetD2D32Async`.
#[derivative_rule(memset)]
fn memset2d(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    let (d, _rd) = dst.device_ptr_mut(stream);
    // SAFETY: the box lies in the buffer.
    unsafe { sys::cuMemsetD2D32Async(d, pitch, 0, width, height, stream.cu_stream()) }.result()
}

/// A 2D box filled with `v`: one `cuMemsetD2D32Async` of its bits.
#[derivative_rule(fill)]
fn fill2d(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: f32,
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    let (d, _rd) = dst.device_ptr_mut(stream);
    // SAFETY: the box lies in the buffer.
    unsafe { sys::cuMemsetD2D32Async(d, pitch, v.to_bits(), width, height, stream.cu_stream()) }
        .result()
}

// ---- Timing ---------------------------------------------------------------------------------

/// Host µs per call of `f`: `CALLS` calls after `WARM`, the stream synchronised at the end;
/// median of `REPS`.
fn per_call(s: &CudaStream, mut f: impl FnMut() -> R<()>) -> R<f64> {
    let mut t = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        for _ in 0..WARM {
            f()?;
        }
        s.synchronize()?;
        let t0 = Instant::now();
        for _ in 0..CALLS {
            f()?;
        }
        s.synchronize()?;
        t.push(t0.elapsed().as_secs_f64() * 1e6 / CALLS as f64);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[REPS / 2])
}

/// As [`per_call`] for a reverse, which needs one tape per call: `make` makes the tapes first
/// (their augmented primals are not timed), `f` consumes one; both on the buffers `b`.
fn per_reverse<B, T>(
    s: &CudaStream,
    b: &mut B,
    mut make: impl FnMut(&mut B) -> R<T>,
    mut f: impl FnMut(&mut B, T) -> R<()>,
) -> R<f64> {
    let mut t = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let mut tapes = Vec::with_capacity(WARM + CALLS);
        for _ in 0..WARM + CALLS {
            tapes.push(make(b)?);
        }
        let mut tapes = tapes.into_iter();
        for tape in tapes.by_ref().take(WARM) {
            f(b, tape)?;
        }
        s.synchronize()?;
        let t0 = Instant::now();
        for tape in tapes {
            f(b, tape)?;
        }
        s.synchronize()?;
        t.push(t0.elapsed().as_secs_f64() * 1e6 / CALLS as f64);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[REPS / 2])
}

fn random(s: &Arc<CudaStream>, n: usize, seed: u64) -> R<CudaSlice<f32>> {
    Ok(s.clone_htod(&rules_runtime::testing::random_vec::<f32>(n, seed))?)
}

/// The profile of what ran since the last call, per call of `calls` calls, as table rows.
fn profile(what: &str, calls: usize) {
    let steps = rules_runtime::testing::probe_take();
    if steps.is_empty() {
        return;
    }
    println!("\n#### profile: {what} (inclusive host ns per rule call)\n");
    println!("| step | ns per call | times per call |");
    println!("|---|---|---|");
    let mut steps = steps;
    steps.sort_by(|a, b| b.1.cmp(&a.1));
    for (name, ns, count) in steps {
        println!(
            "| {name} | {:.0} | {:.2} |",
            ns as f64 / calls as f64,
            count as f64 / calls as f64
        );
    }
}

/// Runs `f` `CALLS` times after clearing the profile, and prints the profile per call.
fn profiled(s: &CudaStream, what: &str, mut f: impl FnMut() -> R<()>) -> R<()> {
    if !cfg!(feature = "probe") {
        return Ok(());
    }
    for _ in 0..WARM {
        f()?;
    }
    s.synchronize()?;
    let _ = rules_runtime::testing::probe_take();
    for _ in 0..CALLS {
        f()?;
    }
    s.synchronize()?;
    profile(what, CALLS);
    Ok(())
}

fn row(what: &str, n: &str, us: f64, bare: f64, bare_name: &str) {
    println!(
        "| {what} | {n} | {us:.2} | {bare_name} {bare:.2} | {:+.2} | {:.2}× |",
        us - bare,
        us / bare
    );
}

// ---- Steady state ---------------------------------------------------------------------------

fn copies(s: &Arc<CudaStream>, n: usize) -> R<()> {
    let x = random(s, n, 1)?;
    let mut dx = random(s, n, 2)?;
    let mut y = random(s, n, 3)?;
    let mut dy = random(s, n, 4)?;
    let on = On::stream(s);
    let dtod = per_call(s, || Ok(s.memcpy_dtod(&x, &mut y)?))?;
    let memset = per_call(s, || Ok(s.memset_zeros(&mut dy)?))?;
    let launch = per_call(s, || Ok(empty_launch(s)?))?;
    let fwd = per_call(s, || {
        Ok(d2d_rule(s).forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?)
    })?;
    let aug = per_call(s, || {
        d2d_rule(s).augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?;
        Ok(())
    })?;
    // The tapes are made on the same buffers, so each reverse is given a tape of its call.
    let rev = {
        let mut bufs = (&mut y, &mut dy, &mut dx);
        per_reverse(
            s,
            &mut bufs,
            |(y, dy, dx)| {
                let t = d2d_rule(s).augmented_primal(
                    Duplicated::new(&mut **y, &mut **dy),
                    Duplicated::new(&x, &mut **dx),
                )?;
                Ok(t)
            },
            |(y, dy, dx), t| {
                Ok(d2d_rule(s).reverse(
                    t,
                    Duplicated::new(&mut **y, &mut **dy),
                    Duplicated::new(&x, &mut **dx),
                )?)
            },
        )?
    };
    let op = per_call(s, || Ok(accumulate_and_zero(on, &mut dx, &mut dy)?))?;
    let n = &n.to_string();
    row("forward (2 copies)", n, fwd, 2.0 * dtod, "2× memcpy_dtod");
    row("augmented_primal", n, aug, dtod, "memcpy_dtod");
    row("reverse (1 launch)", n, rev, launch, "empty launch");
    row("`accumulate_and_zero` op", n, op, launch, "empty launch");
    row("bare memset_zeros", n, memset, launch, "empty launch");
    profiled(s, &format!("forward, n = {n}"), || {
        Ok(d2d_rule(s).forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?)
    })?;
    profiled(s, &format!("augmented_primal, n = {n}"), || {
        d2d_rule(s).augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?;
        Ok(())
    })?;
    profiled(s, &format!("aug + reverse, n = {n}"), || {
        let t = d2d_rule(s).augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?;
        Ok(d2d_rule(s).reverse(
            t,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?)
    })?;
    Ok(())
}

/// The seed's round trip at n = 3: both rules' augmented primals, then both reverses.
fn seed(s: &Arc<CudaStream>) -> R<()> {
    let n = 3;
    let x = vec![1.0f32, 2.0, 3.0];
    let mut dx = vec![0.0f32; n];
    let (mut d, mut dd) = (s.alloc_zeros::<f32>(n)?, s.alloc_zeros::<f32>(n)?);
    let (mut h, mut dh) = (vec![0.0f32; n], vec![0.5f32; n]);
    let bare = per_call(s, || {
        s.memcpy_htod(&x, &mut d)?;
        s.memcpy_dtoh(&d, &mut h)?;
        Ok(())
    })?;
    let mut trip = || -> R<()> {
        let t1 = upload_rule(s).augmented_primal(
            Duplicated::new(&mut d, &mut dd),
            Duplicated::new(&x[..], &mut dx[..]),
        )?;
        let t2 = download_rule(s).augmented_primal(
            Duplicated::new(&mut h[..], &mut dh[..]),
            Duplicated::new(&d, &mut dd),
        )?;
        download_rule(s).reverse(
            t2,
            Duplicated::new(&mut h[..], &mut dh[..]),
            Duplicated::new(&d, &mut dd),
        )?;
        upload_rule(s).reverse(
            t1,
            Duplicated::new(&mut d, &mut dd),
            Duplicated::new(&x[..], &mut dx[..]),
        )?;
        Ok(())
    };
    let rules = per_call(s, &mut trip)?;
    row("seed round trip, pageable", "3", rules, bare, "htod + dtoh");
    profiled(s, "seed round trip, pageable, n = 3", &mut trip)?;

    // The same on device memory: x and h device buffers, two device copies.
    let xd = random(s, n, 5)?;
    let mut dxd = s.alloc_zeros::<f32>(n)?;
    let (mut hd, mut dhd) = (s.alloc_zeros::<f32>(n)?, random(s, n, 6)?);
    let bare = per_call(s, || {
        s.memcpy_dtod(&xd, &mut d)?;
        s.memcpy_dtod(&d, &mut hd)?;
        Ok(())
    })?;
    let mut trip = || -> R<()> {
        let t1 = d2d_rule(s).augmented_primal(
            Duplicated::new(&mut d, &mut dd),
            Duplicated::new(&xd, &mut dxd),
        )?;
        let t2 = d2d_rule(s).augmented_primal(
            Duplicated::new(&mut hd, &mut dhd),
            Duplicated::new(&d, &mut dd),
        )?;
        d2d_rule(s).reverse(
            t2,
            Duplicated::new(&mut hd, &mut dhd),
            Duplicated::new(&d, &mut dd),
        )?;
        d2d_rule(s).reverse(
            t1,
            Duplicated::new(&mut d, &mut dd),
            Duplicated::new(&xd, &mut dxd),
        )?;
        Ok(())
    };
    let rules = per_call(s, &mut trip)?;
    row(
        "seed round trip, device",
        "3",
        rules,
        bare,
        "2× memcpy_dtod",
    );
    profiled(s, "seed round trip, device, n = 3", &mut trip)?;
    Ok(())
}

/// Region rules on a 4 × 4 box (pitch 8 elements) of device memory.
fn regions(s: &Arc<CudaStream>) -> R<()> {
    let (w, h, pitch) = (4usize, 4usize, 32usize);
    let n = 8 * h;
    let x = random(s, n, 7)?;
    let mut dx = random(s, n, 8)?;
    let mut y = random(s, n, 9)?;
    let mut dy = random(s, n, 10)?;
    let launch = per_call(s, || Ok(empty_launch(s)?))?;

    let bare = per_call(s, || Ok(copy2d(s, &mut y, &x, pitch, pitch, w, h)?))?;
    let rule = || copy2d_rule(s, pitch, pitch, w, h);
    let fwd = per_call(s, || {
        Ok(rule().forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?)
    })?;
    let aug = per_call(s, || {
        rule().augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?;
        Ok(())
    })?;
    let pair = per_call(s, || {
        let t = rule().augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?;
        Ok(rule().reverse(
            t,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?)
    })?;
    row(
        "copy2d forward",
        "4×4",
        fwd,
        2.0 * bare,
        "2× cuMemcpy2DAsync",
    );
    row(
        "copy2d augmented_primal",
        "4×4",
        aug,
        bare,
        "cuMemcpy2DAsync",
    );
    row(
        "copy2d reverse (aug + rev − aug)",
        "4×4",
        pair - aug,
        launch,
        "empty launch",
    );
    profiled(s, "copy2d aug + reverse, 4×4", || {
        let t = rule().augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?;
        Ok(rule().reverse(
            t,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )?)
    })?;

    let bare = per_call(s, || Ok(memset2d(s, &mut y, pitch, w, h)?))?;
    let rule = || memset2d_rule(s, pitch, w, h);
    let fwd = per_call(s, || Ok(rule().forward(Duplicated::new(&mut y, &mut dy))?))?;
    let aug = per_call(s, || {
        rule().augmented_primal(Duplicated::new(&mut y, &mut dy))?;
        Ok(())
    })?;
    let pair = per_call(s, || {
        let t = rule().augmented_primal(Duplicated::new(&mut y, &mut dy))?;
        Ok(rule().reverse(t, Duplicated::new(&mut y, &mut dy))?)
    })?;
    row(
        "memset2d forward",
        "4×4",
        fwd,
        2.0 * bare,
        "2× cuMemsetD2D32Async",
    );
    row(
        "memset2d augmented_primal",
        "4×4",
        aug,
        bare,
        "cuMemsetD2D32Async",
    );
    row(
        "memset2d reverse (aug + rev − aug)",
        "4×4",
        pair - aug,
        bare,
        "cuMemsetD2D32Async",
    );

    let bare = per_call(s, || Ok(fill2d(s, &mut y, 1.5, pitch, w, h)?))?;
    let rule = || fill2d_rule(s, pitch, w, h);
    let fwd = per_call(s, || {
        Ok(rule().forward(Duplicated::new(&mut y, &mut dy), Const(1.5f32))?)
    })?;
    let aug = per_call(s, || {
        rule().augmented_primal(Duplicated::new(&mut y, &mut dy), Const(1.5f32))?;
        Ok(())
    })?;
    let pair = per_call(s, || {
        let t = rule().augmented_primal(Duplicated::new(&mut y, &mut dy), Const(1.5f32))?;
        rule().reverse(t, Duplicated::new(&mut y, &mut dy), Const(1.5f32))?;
        Ok(())
    })?;
    row(
        "fill2d forward (Const value)",
        "4×4",
        fwd,
        2.0 * bare,
        "2× cuMemsetD2D32Async",
    );
    row(
        "fill2d augmented_primal",
        "4×4",
        aug,
        bare,
        "cuMemsetD2D32Async",
    );
    row(
        "fill2d reverse (aug + rev − aug)",
        "4×4",
        pair - aug,
        bare,
        "cuMemsetD2D32Async",
    );
    profiled(s, "fill2d aug + reverse, 4×4", || {
        let t = rule().augmented_primal(Duplicated::new(&mut y, &mut dy), Const(1.5f32))?;
        rule().reverse(t, Duplicated::new(&mut y, &mut dy), Const(1.5f32))?;
        Ok(())
    })?;
    Ok(())
}

/// The single driver calls that the rules' steps are made of, each on its own.
fn pieces(s: &Arc<CudaStream>) -> R<()> {
    let ctx = s.context().clone();
    let mut buf = random(s, 4096, 11)?;
    let ev = s.record_event(None)?;
    let get = per_call(s, || {
        Ok(_ = std::hint::black_box(result::ctx::get_current()?))
    })?;
    let bind = per_call(s, || Ok(ctx.bind_to_thread()?))?;
    let set = per_call(s, || {
        // SAFETY: the context is live, and current already.
        Ok(unsafe { result::ctx::set_current(ctx.cu_ctx()) }?)
    })?;
    let capture = per_call(s, || Ok(_ = std::hint::black_box(s.capture_status()?)))?;
    let wait = per_call(s, || Ok(s.wait(&ev)?))?;
    let record = per_call(s, || Ok(ev.record(s)?))?;
    let ptr = per_call(s, || {
        let (p, g) = buf.device_ptr(s);
        drop(g);
        Ok(_ = std::hint::black_box(p))
    })?;
    let ptr_mut = per_call(s, || {
        let (p, g) = buf.device_ptr_mut(s);
        drop(g);
        Ok(_ = std::hint::black_box(p))
    })?;
    let region = per_call(s, || {
        Ok(_ = std::hint::black_box(rules_runtime::ShadowRead::region(&buf)))
    })?;
    let name = per_call(s, || {
        Ok(drop(std::hint::black_box(format!(
            "the shadow of `{}` (lane {})",
            "dst",
            std::hint::black_box(0)
        ))))
    })?;
    println!("\n| piece | host µs per call |");
    println!("|---|---|");
    for (what, us) in [
        ("cuCtxGetCurrent", get),
        ("CudaContext::bind_to_thread (already current)", bind),
        ("cuCtxSetCurrent", set),
        ("cuStreamIsCapturing", capture),
        ("cuStreamWaitEvent (CudaStream::wait)", wait),
        ("cuEventRecord", record),
        ("CudaSlice::device_ptr + guard (event tracking on)", ptr),
        ("CudaSlice::device_ptr_mut + guard", ptr_mut),
        ("ShadowRead::region of a CudaSlice", region),
        ("format! of a lane's name", name),
    ] {
        println!("| {what} | {us:.3} |");
    }
    Ok(())
}

// ---- The first call -------------------------------------------------------------------------

/// One case of the first call in a fresh process; prints a table row.
fn first(case: &str, reserve: bool) -> R<()> {
    let t0 = Instant::now();
    let ctx = rules_runtime::cuda::context(0)?;
    let t_ctx = t0.elapsed().as_secs_f64() * 1e3;
    let s = ctx.new_stream()?;
    let big = case.starts_with("pageable");
    let n = if big { 1 << 26 } else { 3 };
    let t1 = Instant::now();
    if reserve {
        reserve_up_front(&s, n * 4)?;
    }
    let t_reserve = t1.elapsed().as_secs_f64() * 1e3;
    let timed = |f: &mut dyn FnMut() -> R<()>| -> R<f64> {
        let t = Instant::now();
        f()?;
        s.synchronize()?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    let x: Vec<f32> = rules_runtime::testing::random_vec(n, 12);
    let mut hx = x.clone();
    let mut dhx = rules_runtime::testing::random_vec::<f32>(n, 13);
    let mut d = s.clone_htod(&x)?;
    let mut dd = s.clone_htod(&dhx)?;
    s.synchronize()?;
    let (copy_first, rev_first, rev_steady, copy_steady);
    match case {
        // The reverse of a device → pageable copy: d_d += d_h (staged in); d_h ← 0.
        "pageable-d2h" => {
            copy_first = timed(&mut || Ok(s.memcpy_dtoh(&d, &mut hx)?))?;
            let mut rev = || -> R<()> {
                let t = download_rule(&s).augmented_primal(
                    Duplicated::new(&mut hx[..], &mut dhx[..]),
                    Duplicated::new(&d, &mut dd),
                )?;
                s.synchronize()?;
                let t0 = Instant::now();
                download_rule(&s).reverse(
                    t,
                    Duplicated::new(&mut hx[..], &mut dhx[..]),
                    Duplicated::new(&d, &mut dd),
                )?;
                s.synchronize()?;
                LAST.with(|l| l.set(t0.elapsed().as_secs_f64() * 1e3));
                Ok(())
            };
            rev()?;
            rev_first = LAST.with(|l| l.get());
            rev_steady = median_ms(9, &mut rev)?;
            copy_steady = median_ms(9, &mut || {
                let t = Instant::now();
                s.memcpy_dtoh(&d, &mut hx)?;
                s.synchronize()?;
                LAST.with(|l| l.set(t.elapsed().as_secs_f64() * 1e3));
                Ok(())
            })?;
        }
        // The reverse of a pageable → device copy: d_h += d_d (staged out); d_d ← 0.
        "pageable-h2d" => {
            copy_first = timed(&mut || Ok(s.memcpy_htod(&hx, &mut d)?))?;
            let mut rev = || -> R<()> {
                let t = upload_rule(&s).augmented_primal(
                    Duplicated::new(&mut d, &mut dd),
                    Duplicated::new(&hx[..], &mut dhx[..]),
                )?;
                s.synchronize()?;
                let t0 = Instant::now();
                upload_rule(&s).reverse(
                    t,
                    Duplicated::new(&mut d, &mut dd),
                    Duplicated::new(&hx[..], &mut dhx[..]),
                )?;
                s.synchronize()?;
                LAST.with(|l| l.set(t0.elapsed().as_secs_f64() * 1e3));
                Ok(())
            };
            rev()?;
            rev_first = LAST.with(|l| l.get());
            rev_steady = median_ms(9, &mut rev)?;
            copy_steady = median_ms(9, &mut || {
                let t = Instant::now();
                s.memcpy_htod(&hx, &mut d)?;
                s.synchronize()?;
                LAST.with(|l| l.set(t.elapsed().as_secs_f64() * 1e3));
                Ok(())
            })?;
        }
        // The seed round trip at n = 3 (pageable), whole: both augmented primals and reverses.
        _ => {
            let mut y = s.alloc_zeros::<f32>(n)?;
            let mut dy = s.alloc_zeros::<f32>(n)?;
            copy_first = timed(&mut || Ok(s.memcpy_htod(&x, &mut y)?))?;
            let mut trip = || -> R<()> {
                let t0 = Instant::now();
                let t1 = upload_rule(&s).augmented_primal(
                    Duplicated::new(&mut d, &mut dd),
                    Duplicated::new(&x[..], &mut dhx[..]),
                )?;
                let t2 = download_rule(&s).augmented_primal(
                    Duplicated::new(&mut hx[..], &mut dhx[..]),
                    Duplicated::new(&d, &mut dy),
                )?;
                download_rule(&s).reverse(
                    t2,
                    Duplicated::new(&mut hx[..], &mut dhx[..]),
                    Duplicated::new(&d, &mut dy),
                )?;
                upload_rule(&s).reverse(
                    t1,
                    Duplicated::new(&mut d, &mut dd),
                    Duplicated::new(&x[..], &mut dhx[..]),
                )?;
                s.synchronize()?;
                LAST.with(|l| l.set(t0.elapsed().as_secs_f64() * 1e3));
                Ok(())
            };
            trip()?;
            rev_first = LAST.with(|l| l.get());
            rev_steady = median_ms(99, &mut trip)?;
            copy_steady = median_ms(99, &mut || {
                let t = Instant::now();
                s.memcpy_htod(&x, &mut y)?;
                s.synchronize()?;
                LAST.with(|l| l.set(t.elapsed().as_secs_f64() * 1e3));
                Ok(())
            })?;
        }
    }
    println!(
        "| {case} | {} | {t_ctx:.1} | {t_reserve:.1} | {copy_first:.3} | {copy_steady:.3} | {rev_first:.3} | {rev_steady:.3} | {:.2} |",
        if reserve { "yes" } else { "no" },
        rev_first / rev_steady
    );
    Ok(())
}

thread_local! {
    static LAST: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) };
}

/// Median of the times (ms) that `f` leaves in `LAST`, over `k` calls.
fn median_ms(k: usize, f: &mut dyn FnMut() -> R<()>) -> R<f64> {
    let mut t = Vec::with_capacity(k);
    for _ in 0..k {
        f()?;
        t.push(LAST.with(|l| l.get()));
    }
    t.sort_by(f64::total_cmp);
    Ok(t[k / 2])
}

/// What a program calls up front to pay the first call's costs (none before issue 22).
fn reserve_up_front(_s: &Arc<CudaStream>, _bytes: usize) -> R<()> {
    Ok(())
}

fn main() -> R<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--first") {
        let reserve = args.iter().any(|a| a == "--reserve");
        return first(&args[i + 1], reserve);
    }
    let s = match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => {
            println!("overhead bench skipped: no usable GPU ({e})");
            return Ok(());
        }
    };
    println!(
        "# host µs per call, f32, {CALLS} calls after {WARM}, stream synchronised at the end, median of {REPS}{}",
        if cfg!(feature = "probe") {
            " (probe build: the steps time themselves)"
        } else {
            ""
        }
    );
    println!("\n| call | n | rule µs | bare µs | rule − bare | rule / bare |");
    println!("|---|---|---|---|---|---|");
    for n in [1usize, 256, 4096, 65536] {
        copies(&s, n)?;
    }
    seed(&s)?;
    regions(&s)?;
    pieces(&s)?;
    drop(s);
    // The first call, each case in a fresh process.
    println!(
        "\n| first call: case | reserved | context ms | reserve ms | copy first ms | copy steady ms | rule first ms | rule steady ms | first / steady |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let me = std::env::current_exe()?;
    for case in ["seed3", "pageable-d2h", "pageable-h2d"] {
        for reserve in [false, true] {
            let mut c = std::process::Command::new(&me);
            c.args(["--first", case]);
            if reserve {
                c.arg("--reserve");
            }
            let out = c.output()?;
            print!("{}", String::from_utf8_lossy(&out.stdout));
            if !out.status.success() {
                println!(
                    "| {case} | failed: {} |",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    Ok(())
}
