//! The host cost of one rule call at small n, beside the bare calls it wraps (docs/performance.md, "Host cost per call").
//!
//!     cargo bench -p rules-runtime --features testing --bench overhead          (on a GPU machine)
//!     ... --features probe: the same, then the host time of each step of a call (`driver::probe`)
//!
//! Every figure is the host's clock over 4000 calls after 200 warm-up calls, the stream
//! synchronised at the end, per call; the median of 5 repetitions, interleaved with those of the
//! bare calls (cudarc's copy, memset, the driver's 2D copy and memset, one kernel launch) that the
//! rules wrap. Twice: on the context's default stream alone (cudarc orders buffers by events only
//! once a context has several streams), then on a second stream (event tracking on, as with
//! `cuda::stream`; `--tracking-only`: this one alone).
//!
//! The first call in a process is timed in child processes of this program (`--first CASE`):
//! each starts the driver, makes its context, loads the kernels, then times its first call and its
//! steady state, without and with `cuda::reserve` (`--plain-first-only`: without alone).
//! `--profile-only` (with `--features probe`): the step profiles alone.

use rules_runtime::cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg, result, sys};
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError};
use rules_runtime::cudarc::nvrtc::Ptx;
use rules_runtime::testing::kernels::empty_launch;
use rules_runtime::{Const, CopyRule, Duplicated, FillRule, MemsetRule, On, RegionRule};
use rules_runtime::{accumulate_and_zero, derivative_rule};
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

type R<T> = Result<T, Box<dyn std::error::Error>>;

const CALLS: usize = 4000;
const WARM: usize = 200;
const REPS: usize = 5;

/// `--profile-only` (probe builds): the profiles alone, no tables, no child processes.
static PROFILE_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn profile_only() -> bool {
    PROFILE_ONLY.load(std::sync::atomic::Ordering::Relaxed)
}

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
    let p = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: core::ptr::null(),
        srcDevice: s,
        srcArray: core::ptr::null_mut(),
        srcPitch: spitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: core::ptr::null_mut(),
        dstDevice: d,
        dstArray: core::ptr::null_mut(),
        dstPitch: dpitch,
        WidthInBytes: width * 4,
        Height: height,
    };
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

/// One repetition: `WARM` calls of `f`, then `CALLS` timed by the host's clock, the stream
/// synchronised at the end; µs per call.
fn once(s: &CudaStream, f: &mut dyn FnMut() -> R<()>) -> R<f64> {
    for _ in 0..WARM {
        f()?;
    }
    s.synchronize()?;
    let t0 = Instant::now();
    for _ in 0..CALLS {
        f()?;
    }
    s.synchronize()?;
    Ok(t0.elapsed().as_secs_f64() * 1e6 / CALLS as f64)
}

/// As [`once`] for a reverse, which needs one tape per call: `make` makes the tapes first (their
/// augmented primals are not timed), `f` consumes one.
fn once_reverse<T>(
    s: &CudaStream,
    make: &mut dyn FnMut() -> R<T>,
    f: &mut dyn FnMut(T) -> R<()>,
) -> R<f64> {
    let mut tapes = Vec::with_capacity(WARM + CALLS);
    for _ in 0..WARM + CALLS {
        tapes.push(make()?);
    }
    let mut tapes = tapes.into_iter();
    for tape in tapes.by_ref().take(WARM) {
        f(tape)?;
    }
    s.synchronize()?;
    let t0 = Instant::now();
    for tape in tapes {
        f(tape)?;
    }
    s.synchronize()?;
    Ok(t0.elapsed().as_secs_f64() * 1e6 / CALLS as f64)
}

/// The median over `REPS` repetitions of each of `rows` (each returns one repetition's µs per
/// call), the repetitions interleaved (one of each in turn), so that the machine's drift during
/// the run falls on the bare calls and the rules alike.
fn medians(rows: &mut [&mut dyn FnMut() -> R<f64>]) -> R<Vec<f64>> {
    if profile_only() {
        return Ok(vec![1.0; rows.len()]);
    }
    let mut t = vec![Vec::with_capacity(REPS); rows.len()];
    for _ in 0..REPS {
        for (i, r) in rows.iter_mut().enumerate() {
            t[i].push(r()?);
        }
    }
    Ok(t.into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            v[REPS / 2]
        })
        .collect())
}

/// The four buffers of a copy `y ← x` and their shadows.
struct Four {
    x: CudaSlice<f32>,
    dx: CudaSlice<f32>,
    y: CudaSlice<f32>,
    dy: CudaSlice<f32>,
}

impl Four {
    fn new(s: &Arc<CudaStream>, n: usize, seed: u64) -> R<RefCell<Self>> {
        Ok(RefCell::new(Four {
            x: random(s, n, seed)?,
            dx: random(s, n, seed + 1)?,
            y: random(s, n, seed + 2)?,
            dy: random(s, n, seed + 3)?,
        }))
    }
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
    steps.sort_by_key(|e| std::cmp::Reverse(e.1));
    for (name, ns, count) in steps {
        println!(
            "| {name} | {:.0} | {:.2} |",
            ns as f64 / calls as f64,
            count as f64 / calls as f64
        );
    }
}

/// Runs `f` `CALLS` times after clearing the profile, and prints the profile per call.
fn profiled(s: &CudaStream, what: &str, f: &mut dyn FnMut() -> R<()>) -> R<()> {
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
    if profile_only() {
        return;
    }
    println!(
        "| {what} | {n} | {us:.2} | {bare_name} {bare:.2} | {:+.2} | {:.2}× |",
        us - bare,
        us / bare
    );
}

/// One of the runtime's own kernels, loaded through cudarc (`load_module`): what a user who
/// writes the shadow work by hand launches, with cudarc's launch builder and its event tracking.
fn cudarc_kernel(s: &Arc<CudaStream>, name: &str) -> R<CudaFunction> {
    let module = s
        .context()
        .load_module(Ptx::from_src(rules_runtime::testing::kernels::PTX))?;
    Ok(module.load_function(name)?)
}

/// `accumulate[_and_zero]_f32(acc, src, n)` launched through cudarc's builder on two buffers of
/// `n` elements (the kernels walk any grid with a stride).
fn cudarc_launch(
    s: &CudaStream,
    f: &CudaFunction,
    acc: &mut CudaSlice<f32>,
    src: &mut CudaSlice<f32>,
) -> R<()> {
    let n = acc.len().min(src.len());
    let n64 = n as u64;
    let mut l = s.launch_builder(f);
    l.arg(acc).arg(src).arg(&n64);
    let blocks = n.div_ceil(256).clamp(1, 1024) as u32;
    // SAFETY: the kernel takes (acc, src, n) and touches elements 0..n of each, which both
    // buffers hold; they are distinct buffers.
    unsafe {
        l.launch(LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        })
    }?;
    Ok(())
}

// ---- Steady state ---------------------------------------------------------------------------

fn copies(s: &Arc<CudaStream>, n: usize) -> R<()> {
    let b = Four::new(s, n, 1)?;
    let on = On::stream(s);
    let mut dtod = || {
        let Four { x, y, .. } = &mut *b.borrow_mut();
        Ok(s.memcpy_dtod(&*x, y)?)
    };
    let mut memset = || Ok(s.memset_zeros(&mut b.borrow_mut().dy)?);
    let mut launch = || Ok(empty_launch(s)?);
    let mut fwd = || {
        let Four { x, dx, y, dy } = &mut *b.borrow_mut();
        Ok(d2d_rule(s).forward(Duplicated::new(y, dy), Duplicated::new(&*x, dx))?)
    };
    let mut aug = || {
        let Four { x, dx, y, dy } = &mut *b.borrow_mut();
        d2d_rule(s).augmented_primal(Duplicated::new(y, dy), Duplicated::new(&*x, dx))?;
        Ok(())
    };
    // The tapes are made on the same buffers, so each reverse is given a tape of its call.
    let mut make = || {
        let Four { x, dx, y, dy } = &mut *b.borrow_mut();
        Ok(d2d_rule(s).augmented_primal(Duplicated::new(y, dy), Duplicated::new(&*x, dx))?)
    };
    let mut rev = |t| {
        let Four { x, dx, y, dy } = &mut *b.borrow_mut();
        Ok(d2d_rule(s).reverse(t, Duplicated::new(y, dy), Duplicated::new(&*x, dx))?)
    };
    let mut op = || {
        let Four { dx, dy, .. } = &mut *b.borrow_mut();
        Ok(accumulate_and_zero(on, dx, dy)?)
    };
    // The reverse's work written by hand: the same kernel on the same two shadows, launched
    // through cudarc (which, on a second stream, orders each buffer by its events).
    let fused = cudarc_kernel(s, "accumulate_and_zero_f32")?;
    let mut by_hand = || {
        let Four { dx, dy, .. } = &mut *b.borrow_mut();
        cudarc_launch(s, &fused, dx, dy)
    };
    let m = medians(&mut [
        &mut || once(s, &mut dtod),
        &mut || once(s, &mut fwd),
        &mut || once(s, &mut aug),
        &mut || once(s, &mut launch),
        &mut || once_reverse(s, &mut make, &mut rev),
        &mut || once(s, &mut op),
        &mut || once(s, &mut memset),
        &mut || once(s, &mut by_hand),
    ])?;
    let n = &n.to_string();
    row("forward (2 copies)", n, m[1], 2.0 * m[0], "2× memcpy_dtod");
    row("augmented_primal", n, m[2], m[0], "memcpy_dtod");
    row("reverse (1 launch)", n, m[4], m[3], "empty launch");
    row(
        "reverse (1 launch)",
        n,
        m[4],
        m[7],
        "cudarc launch on the 2 shadows",
    );
    row("`accumulate_and_zero` op", n, m[5], m[3], "empty launch");
    row(
        "cudarc launch on the 2 shadows",
        n,
        m[7],
        m[3],
        "empty launch",
    );
    row("bare memset_zeros", n, m[6], m[3], "empty launch");
    profiled(s, &format!("forward, n = {n}"), &mut fwd)?;
    profiled(s, &format!("augmented_primal, n = {n}"), &mut aug)?;
    profiled(s, &format!("aug + reverse, n = {n}"), &mut || rev(make()?))?;
    Ok(())
}

/// The seed's round trip at n = 3: both rules' augmented primals, then both reverses.
fn seed(s: &Arc<CudaStream>) -> R<()> {
    let n = 3;
    let x = vec![1.0f32, 2.0, 3.0];
    let mut dx = vec![0.0f32; n];
    let (mut d, mut dd) = (s.alloc_zeros::<f32>(n)?, s.alloc_zeros::<f32>(n)?);
    let (mut h, mut dh) = (vec![0.0f32; n], vec![0.5f32; n]);
    // The same on device memory: x and h device buffers, two device copies.
    let (xd, mut dxd) = (random(s, n, 5)?, s.alloc_zeros::<f32>(n)?);
    let (mut hd, mut dhd) = (s.alloc_zeros::<f32>(n)?, random(s, n, 6)?);
    let (mut e, mut de) = (s.alloc_zeros::<f32>(n)?, s.alloc_zeros::<f32>(n)?);
    let bufs = RefCell::new((&mut d, &mut dd, &mut h, &mut dh, &mut dx));
    let dev = RefCell::new((&mut e, &mut de, &mut hd, &mut dhd, &mut dxd));
    let mut bare = || {
        let (d, _, h, _, _) = &mut *bufs.borrow_mut();
        s.memcpy_htod(&x, &mut **d)?;
        s.memcpy_dtoh(&**d, &mut h[..])?;
        Ok(())
    };
    let mut trip = || -> R<()> {
        let (d, dd, h, dh, dx) = &mut *bufs.borrow_mut();
        let t1 = upload_rule(s).augmented_primal(
            Duplicated::new(&mut **d, &mut **dd),
            Duplicated::new(&x[..], &mut dx[..]),
        )?;
        let t2 = download_rule(s).augmented_primal(
            Duplicated::new(&mut h[..], &mut dh[..]),
            Duplicated::new(&**d, &mut **dd),
        )?;
        download_rule(s).reverse(
            t2,
            Duplicated::new(&mut h[..], &mut dh[..]),
            Duplicated::new(&**d, &mut **dd),
        )?;
        upload_rule(s).reverse(
            t1,
            Duplicated::new(&mut **d, &mut **dd),
            Duplicated::new(&x[..], &mut dx[..]),
        )?;
        Ok(())
    };
    let mut bare_dev = || {
        let (e, _, hd, _, _) = &mut *dev.borrow_mut();
        s.memcpy_dtod(&xd, &mut **e)?;
        s.memcpy_dtod(&**e, &mut **hd)?;
        Ok(())
    };
    let mut trip_dev = || -> R<()> {
        let (e, de, hd, dhd, dxd) = &mut *dev.borrow_mut();
        let t1 = d2d_rule(s).augmented_primal(
            Duplicated::new(&mut **e, &mut **de),
            Duplicated::new(&xd, &mut **dxd),
        )?;
        let t2 = d2d_rule(s).augmented_primal(
            Duplicated::new(&mut **hd, &mut **dhd),
            Duplicated::new(&**e, &mut **de),
        )?;
        d2d_rule(s).reverse(
            t2,
            Duplicated::new(&mut **hd, &mut **dhd),
            Duplicated::new(&**e, &mut **de),
        )?;
        d2d_rule(s).reverse(
            t1,
            Duplicated::new(&mut **e, &mut **de),
            Duplicated::new(&xd, &mut **dxd),
        )?;
        Ok(())
    };
    // The same round trips written by hand with cudarc, as a backward pass without rules would
    // do them: the bare copies, then each reverse's transfer, kernel and zeroing, with no check.
    // The floor that the reverse's data movement sets, measured in the same run.
    let (add, fused) = (
        cudarc_kernel(s, "accumulate_f32")?,
        cudarc_kernel(s, "accumulate_and_zero_f32")?,
    );
    let (mut tmp_d, mut tmp_h) = (s.alloc_zeros::<f32>(n)?, vec![0.0f32; n]);
    let tmp = RefCell::new((&mut tmp_d, &mut tmp_h));
    let mut hand = || -> R<()> {
        let (d, dd, h, dh, dx) = &mut *bufs.borrow_mut();
        let (tmp_d, tmp_h) = &mut *tmp.borrow_mut();
        s.memcpy_htod(&x, &mut **d)?;
        s.memcpy_dtoh(&**d, &mut h[..])?;
        // Reverse of the download, dd += dh; dh ← 0: the pageable source is staged by the
        // driver before `memcpy_htod` returns, so the host may zero it at once.
        s.memcpy_htod(&dh[..], &mut **tmp_d)?;
        cudarc_launch(s, &add, dd, tmp_d)?;
        dh.fill(0.0);
        // Reverse of the upload, dx += dd; dd ← 0 (a copy to pageable memory returns once done).
        s.memcpy_dtoh(&**dd, &mut tmp_h[..])?;
        dx.iter_mut().zip(tmp_h.iter()).for_each(|(a, b)| *a += *b);
        s.memset_zeros(&mut **dd)?;
        Ok(())
    };
    let mut hand_dev = || -> R<()> {
        let (e, de, hd, dhd, dxd) = &mut *dev.borrow_mut();
        s.memcpy_dtod(&xd, &mut **e)?;
        s.memcpy_dtod(&**e, &mut **hd)?;
        cudarc_launch(s, &fused, de, dhd)?;
        cudarc_launch(s, &fused, dxd, de)?;
        Ok(())
    };
    let m = medians(&mut [
        &mut || once(s, &mut bare),
        &mut || once(s, &mut trip),
        &mut || once(s, &mut bare_dev),
        &mut || once(s, &mut trip_dev),
        &mut || once(s, &mut hand),
        &mut || once(s, &mut hand_dev),
    ])?;
    row("seed round trip, pageable", "3", m[1], m[0], "htod + dtoh");
    row("seed round trip, device", "3", m[3], m[2], "2× memcpy_dtod");
    row(
        "seed round trip, pageable",
        "3",
        m[1],
        m[4],
        "by hand with cudarc",
    );
    row(
        "seed round trip, device",
        "3",
        m[3],
        m[5],
        "by hand with cudarc",
    );
    row(
        "by hand with cudarc, pageable",
        "3",
        m[4],
        m[0],
        "htod + dtoh",
    );
    row(
        "by hand with cudarc, device",
        "3",
        m[5],
        m[2],
        "2× memcpy_dtod",
    );
    profiled(s, "seed round trip, pageable, n = 3", &mut trip)?;
    profiled(s, "seed round trip, device, n = 3", &mut trip_dev)?;
    Ok(())
}

/// Region rules on a 4 × 4 box (pitch 8 elements) of device memory.
fn regions(s: &Arc<CudaStream>) -> R<()> {
    let (w, h, pitch) = (4usize, 4usize, 32usize);
    let b = Four::new(s, 8 * h, 7)?;
    let mut launch = || Ok(empty_launch(s)?);
    let copy = || copy2d_rule(s, pitch, pitch, w, h);
    let mut bare_copy = || {
        let Four { x, y, .. } = &mut *b.borrow_mut();
        Ok(copy2d(s, y, x, pitch, pitch, w, h)?)
    };
    let mut copy_fwd = || {
        let Four { x, dx, y, dy } = &mut *b.borrow_mut();
        Ok(copy().forward(Duplicated::new(y, dy), Duplicated::new(&*x, dx))?)
    };
    let mut copy_aug = || {
        let Four { x, dx, y, dy } = &mut *b.borrow_mut();
        copy().augmented_primal(Duplicated::new(y, dy), Duplicated::new(&*x, dx))?;
        Ok(())
    };
    let mut copy_make = || {
        let Four { x, dx, y, dy } = &mut *b.borrow_mut();
        Ok(copy().augmented_primal(Duplicated::new(y, dy), Duplicated::new(&*x, dx))?)
    };
    let mut copy_rev = |t| {
        let Four { x, dx, y, dy } = &mut *b.borrow_mut();
        Ok(copy().reverse(t, Duplicated::new(y, dy), Duplicated::new(&*x, dx))?)
    };
    let set = || memset2d_rule(s, pitch, w, h);
    let mut bare_set = || Ok(memset2d(s, &mut b.borrow_mut().y, pitch, w, h)?);
    let mut set_fwd = || {
        let Four { y, dy, .. } = &mut *b.borrow_mut();
        Ok(set().forward(Duplicated::new(y, dy))?)
    };
    let mut set_aug = || {
        let Four { y, dy, .. } = &mut *b.borrow_mut();
        set().augmented_primal(Duplicated::new(y, dy))?;
        Ok(())
    };
    let mut set_make = || {
        let Four { y, dy, .. } = &mut *b.borrow_mut();
        Ok(set().augmented_primal(Duplicated::new(y, dy))?)
    };
    let mut set_rev = |t| {
        let Four { y, dy, .. } = &mut *b.borrow_mut();
        Ok(set().reverse(t, Duplicated::new(y, dy))?)
    };
    let fill = || fill2d_rule(s, pitch, w, h);
    let mut bare_fill = || Ok(fill2d(s, &mut b.borrow_mut().y, 1.5, pitch, w, h)?);
    let mut fill_fwd = || {
        let Four { y, dy, .. } = &mut *b.borrow_mut();
        Ok(fill().forward(Duplicated::new(y, dy), Const(1.5f32))?)
    };
    let mut fill_aug = || {
        let Four { y, dy, .. } = &mut *b.borrow_mut();
        fill().augmented_primal(Duplicated::new(y, dy), Const(1.5f32))?;
        Ok(())
    };
    let mut fill_make = || {
        let Four { y, dy, .. } = &mut *b.borrow_mut();
        Ok(fill().augmented_primal(Duplicated::new(y, dy), Const(1.5f32))?)
    };
    let mut fill_rev = |t| {
        let Four { y, dy, .. } = &mut *b.borrow_mut();
        fill().reverse(t, Duplicated::new(y, dy), Const(1.5f32))?;
        Ok(())
    };
    let m = medians(&mut [
        &mut || once(s, &mut launch),
        &mut || once(s, &mut bare_copy),
        &mut || once(s, &mut copy_fwd),
        &mut || once(s, &mut copy_aug),
        &mut || once_reverse(s, &mut copy_make, &mut copy_rev),
        &mut || once(s, &mut bare_set),
        &mut || once(s, &mut set_fwd),
        &mut || once(s, &mut set_aug),
        &mut || once_reverse(s, &mut set_make, &mut set_rev),
        &mut || once(s, &mut bare_fill),
        &mut || once(s, &mut fill_fwd),
        &mut || once(s, &mut fill_aug),
        &mut || once_reverse(s, &mut fill_make, &mut fill_rev),
    ])?;
    let launch = m[0];
    let bx = "4×4";
    row("copy2d forward", bx, m[2], 2.0 * m[1], "2× cuMemcpy2DAsync");
    row("copy2d augmented_primal", bx, m[3], m[1], "cuMemcpy2DAsync");
    row(
        "copy2d reverse (1 launch)",
        bx,
        m[4],
        launch,
        "empty launch",
    );
    row(
        "memset2d forward",
        bx,
        m[6],
        2.0 * m[5],
        "2× cuMemsetD2D32Async",
    );
    row(
        "memset2d augmented_primal",
        bx,
        m[7],
        m[5],
        "cuMemsetD2D32Async",
    );
    row(
        "memset2d reverse (zero the box)",
        bx,
        m[8],
        m[5],
        "cuMemsetD2D32Async",
    );
    row(
        "fill2d forward (Const value)",
        bx,
        m[10],
        2.0 * m[9],
        "2× cuMemsetD2D32Async",
    );
    row(
        "fill2d augmented_primal",
        bx,
        m[11],
        m[9],
        "cuMemsetD2D32Async",
    );
    row(
        "fill2d reverse (zero the box)",
        bx,
        m[12],
        m[9],
        "cuMemsetD2D32Async",
    );
    profiled(s, "copy2d aug + reverse, 4×4", &mut || {
        copy_rev(copy_make()?)
    })?;
    profiled(s, "fill2d aug + reverse, 4×4", &mut || {
        fill_rev(fill_make()?)
    })?;
    Ok(())
}

/// The median over `REPS` repetitions of [`once`] of `f`.
fn per_call(s: &CudaStream, mut f: impl FnMut() -> R<()>) -> R<f64> {
    Ok(medians(&mut [&mut || once(s, &mut f)])?[0])
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
        let name = format!(
            "the shadow of `{}` (lane {})",
            "dst",
            std::hint::black_box(0)
        );
        std::hint::black_box(name);
        Ok(())
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
        ("CudaSlice::device_ptr + guard", ptr),
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
    // Where a program's first moments go: the driver's start (`cuInit`, in the device count), the
    // context, the runtime's kernels (module load), then the first calls.
    let t0 = Instant::now();
    rules_runtime::cuda::device_count()?;
    let t_init = t0.elapsed().as_secs_f64() * 1e3;
    let t0 = Instant::now();
    let ctx = rules_runtime::cudarc::driver::CudaContext::new(0)?;
    let t_ctx = t0.elapsed().as_secs_f64() * 1e3;
    let t0 = Instant::now();
    rules_runtime::cuda::prepare(&ctx)?;
    let t_module = t0.elapsed().as_secs_f64() * 1e3;
    let s = ctx.new_stream()?;
    let big = case.starts_with("pageable");
    let n = if big { 1 << 26 } else { 3 };
    let t1 = Instant::now();
    let what = if reserve {
        reserve_up_front(&s, n * 4)?
    } else {
        String::new()
    };
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
    // Probe builds: the steps of the first round trip (`seed3` cases), printed after the row.
    let mut first_steps = Vec::new();
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
        // The seed round trip at n = 3 (pageable): both augmented primals, then both reverses.
        // `seed3` times the reverses (the first reverse against the steady ones, DESIGN §7),
        // `seed3-trip` the whole round trip. The bare copies run first in both directions, as in
        // any program that copies: the driver's own first pageable copies are not the rules'.
        _ => {
            let whole = case == "seed3-trip";
            let mut y = s.alloc_zeros::<f32>(n)?;
            let mut dy = s.alloc_zeros::<f32>(n)?;
            let mut hy = vec![0.0f32; n];
            let mut bare = || -> R<()> {
                s.memcpy_htod(&x, &mut y)?;
                s.memcpy_dtoh(&y, &mut hy)?;
                Ok(())
            };
            copy_first = timed(&mut bare)?;
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
                if !whole {
                    s.synchronize()?;
                }
                let t_rev = Instant::now();
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
                let from = if whole { t0 } else { t_rev };
                LAST.with(|l| l.set(from.elapsed().as_secs_f64() * 1e3));
                Ok(())
            };
            let _ = rules_runtime::testing::probe_take();
            trip()?;
            first_steps = rules_runtime::testing::probe_take();
            rev_first = LAST.with(|l| l.get());
            rev_steady = median_ms(99, &mut trip)?;
            copy_steady = median_ms(99, &mut || {
                let t = Instant::now();
                bare()?;
                s.synchronize()?;
                LAST.with(|l| l.set(t.elapsed().as_secs_f64() * 1e3));
                Ok(())
            })?;
        }
    }
    println!(
        "| {case} | {} | {t_init:.1} | {t_ctx:.1} | {t_module:.1} | {t_reserve:.1}{what} | {copy_first:.3} | {copy_steady:.3} | {rev_first:.3} | {rev_steady:.3} | {:.2} |",
        if reserve { "yes" } else { "no" },
        rev_first / rev_steady
    );
    if !first_steps.is_empty() {
        first_steps.sort_by_key(|e| std::cmp::Reverse(e.1));
        let top: Vec<String> = first_steps
            .iter()
            .take(12)
            .map(|(name, ns, count)| format!("{name} {:.1} µs ×{count}", *ns as f64 / 1e3))
            .collect();
        println!("first round trip's steps ({case}): {}", top.join("; "));
    }
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

/// What a program calls up front to pay the first call's costs (`cuda::reserve`: docs/performance.md, "The first call").
fn reserve_up_front(s: &Arc<CudaStream>, bytes: usize) -> R<String> {
    let r = rules_runtime::cuda::reserve(s, bytes)?;
    Ok(format!(
        " ({:.1} MiB pinned, {} threads)",
        (r.small_pinned_bytes + r.pipeline_pinned_bytes) as f64 / (1 << 20) as f64,
        r.host_threads
    ))
}

fn main() -> R<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--first") {
        let reserve = args.iter().any(|a| a == "--reserve");
        return first(&args[i + 1], reserve);
    }
    PROFILE_ONLY.store(
        args.iter().any(|a| a == "--profile-only"),
        std::sync::atomic::Ordering::Relaxed,
    );
    let ctx = match rules_runtime::cuda::context(0) {
        Ok(c) => c,
        Err(e) => {
            println!("overhead bench skipped: no usable GPU ({e})");
            return Ok(());
        }
    };
    println!(
        "# host µs per call, f32, {CALLS} calls after {WARM}, stream synchronised at the end, median of {REPS} interleaved repetitions{}",
        if cfg!(feature = "probe") {
            " (probe build: the steps time themselves)"
        } else {
            ""
        }
    );
    // First with the context's one stream (cudarc orders buffers by events only once a context
    // has several streams), then on a second stream, as `cuda::stream` gives (event tracking on).
    for (mode, s) in [
        (
            "the default stream, the context's only one (cudarc's event tracking idle)",
            None,
        ),
        (
            "a second stream (`cuda::stream`: cudarc's event tracking on)",
            Some(()),
        ),
    ] {
        let s = match s {
            None if args.iter().any(|a| a == "--tracking-only") => continue,
            None => ctx.default_stream(),
            Some(()) => ctx.new_stream()?,
        };
        println!("\n### {mode}\n");
        println!("| call | n | rule µs | bare µs | rule − bare | rule / bare |");
        println!("|---|---|---|---|---|---|");
        for n in [1usize, 256, 4096, 65536] {
            copies(&s, n)?;
        }
        seed(&s)?;
        regions(&s)?;
        if !profile_only() {
            pieces(&s)?;
        }
    }
    if profile_only() {
        return Ok(());
    }
    // The first call, each case in a fresh process.
    println!(
        "\n| first call: case | reserved | cuInit ms | context ms | module ms | reserve ms | copy first ms | copy steady ms | rule first ms | rule steady ms | first / steady |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let me = std::env::current_exe()?;
    for case in ["seed3", "seed3-trip", "pageable-d2h", "pageable-h2d"] {
        // `--plain-first-only`: a runtime without `cuda::reserve` (the first call paying for everything).
        let plain = args.iter().any(|a| a == "--plain-first-only");
        for reserve in [false, true].into_iter().filter(|&r| !(r && plain)) {
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
