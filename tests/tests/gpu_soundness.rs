//! GPU regression tests of the runtime's ownership and ordering:
//! staging shared by threads, contexts dropped and recreated, page-locked memory passed as a
//! slice, a failing lane, caches released with their streams, and a driver without a device.
//!
//! Every GPU test is `#[ignore]`d so that a machine without a GPU reports it as *ignored*
//! (skipped), never as passed. On a GPU machine run with `--include-ignored`.

use rules_runtime::CopyRule;
use rules_runtime::cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, DriverError, UnifiedSlice,
};
use rules_runtime::{Duplicated, Error, derivative_rule};
use rules_tests::{download_rule, upload_rule};
use std::sync::Arc;

// `upload` and `download` (host ↔ device) are the crate library's.

/// Device → unified.
#[derivative_rule(copy)]
fn to_unified(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut UnifiedSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// The tests here measure process-wide state (device memory, the runtime's cache): they run one
/// at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

/// A value per (thread, iteration, index) that is exact in f32 and never repeats within a run.
fn value(t: usize, i: usize, k: usize) -> f32 {
    (t * 1000 + i) as f32 + (k % 8) as f32 / 8.0
}

/// One staged round trip's reverse on `s`: `x (host) → y (device) → z (host)`, cotangent of z
/// seeded with `seed`; both reverses go through staging (pageable ↔ device). Returns `dx`.
fn staged_round_trip(s: &Arc<CudaStream>, seed: &[f32]) -> Vec<f32> {
    let n = seed.len();
    let x = vec![0.5f32; n];
    let mut y = s.alloc_zeros::<f32>(n).unwrap();
    let mut z = vec![0.0f32; n];
    let mut dx = vec![0.0f32; n];
    let mut dy = s.alloc_zeros::<f32>(n).unwrap();
    let mut dz = vec![0.0f32; n];
    let t1 = upload_rule(s)
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    let t2 = download_rule(s)
        .augmented_primal(
            Duplicated::new(&mut z[..], &mut dz[..]),
            Duplicated::new(&y, &mut dy),
        )
        .unwrap();
    dz.copy_from_slice(seed);
    download_rule(s)
        .reverse(
            t2,
            Duplicated::new(&mut z[..], &mut dz[..]),
            Duplicated::new(&y, &mut dy),
        )
        .unwrap();
    upload_rule(s)
        .reverse(
            t1,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    s.synchronize().unwrap();
    assert!(dz.iter().all(|v| *v == 0.0), "dz zeroed");
    assert!(
        s.clone_dtoh(&dy).unwrap().iter().all(|v| *v == 0.0),
        "dy zeroed"
    );
    dx
}

/// Design argument (why this cannot race, whatever the timing): a staging buffer is leased
/// exclusively for one operation and returned with an event recorded after its last use; the
/// next lease makes its stream wait for that event. cudarc's `per_thread_stream()` has the same
/// handle on every thread, which is harmless because streams are not keys. The test stresses it
/// with distinct data per thread and iteration and growing sizes (growth frees buffers).
#[test]
#[ignore = "needs a CUDA GPU"]
fn staged_reverses_from_8_threads_on_per_thread_streams_are_exact() {
    let _serial = serial();
    let ctx = gpu().context().clone();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let ctx = ctx.clone();
            scope.spawn(move || {
                let s = ctx.per_thread_stream();
                for i in 0..100 {
                    let n = 1000 + 97 * ((i * 7 + t) % 13) + t;
                    let seed: Vec<f32> = (0..n).map(|k| value(t, i, k)).collect();
                    let dx = staged_round_trip(&s, &seed);
                    assert_eq!(dx, seed, "thread {t}, iteration {i}");
                }
            });
        }
    });
}

/// The cache holds the context it stages on, so a dropped and recreated context never gets DMA
/// into freed staging memory; what nobody else holds is released on the next use.
#[test]
#[ignore = "needs a CUDA GPU"]
fn context_dropped_and_recreated_between_staged_reverses() {
    let _serial = serial();
    for round in 0..4 {
        let s = gpu();
        let seed: Vec<f32> = (0..(1 << 16) + round).map(|k| value(round, 0, k)).collect();
        assert_eq!(staged_round_trip(&s, &seed), seed, "round {round}");
        let (contexts, _, _) = rules_runtime::testing::cache_held(s.context());
        assert!(
            contexts <= 2,
            "round {round}: the cache holds {contexts} contexts"
        );
        drop(s); // the stream, and with it this round's last `Arc<CudaContext>`
    }
}

/// Page-locked memory handed over as a plain slice: the host→device copy of the reverse is then
/// truly asynchronous, and the slice must not be zeroed before the copy has read it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_memory_passed_as_a_slice_reverses_exactly() {
    let _serial = serial();
    let s = gpu();
    let n = 1 << 24;
    let mut pinned_dz = unsafe { s.context().alloc_pinned::<f32>(n) }.unwrap();
    let mut pinned_dx = unsafe { s.context().alloc_pinned::<f32>(n) }.unwrap();
    for round in 0..3 {
        let x = vec![1.0f32; n];
        let mut y = s.alloc_zeros::<f32>(n).unwrap();
        let mut z = vec![0.0f32; n];
        let mut dy = s.alloc_zeros::<f32>(n).unwrap();
        let dz = pinned_dz.as_mut_slice().unwrap();
        let dx = pinned_dx.as_mut_slice().unwrap();
        dx.fill(0.0);
        let t1 = upload_rule(&s)
            .augmented_primal(
                Duplicated::new(&mut y, &mut dy),
                Duplicated::new(&x[..], &mut dx[..]),
            )
            .unwrap();
        let t2 = download_rule(&s)
            .augmented_primal(
                Duplicated::new(&mut z[..], &mut dz[..]),
                Duplicated::new(&y, &mut dy),
            )
            .unwrap();
        for (k, v) in dz.iter_mut().enumerate() {
            *v = value(round, 0, k);
        }
        download_rule(&s)
            .reverse(
                t2,
                Duplicated::new(&mut z[..], &mut dz[..]),
                Duplicated::new(&y, &mut dy),
            )
            .unwrap();
        upload_rule(&s)
            .reverse(
                t1,
                Duplicated::new(&mut y, &mut dy),
                Duplicated::new(&x[..], &mut dx[..]),
            )
            .unwrap();
        s.synchronize().unwrap();
        assert!(dz.iter().all(|v| *v == 0.0), "round {round}: dz zeroed");
        for (k, v) in dx.iter().enumerate() {
            assert_eq!(*v, value(round, 0, k), "round {round}: dx[{k}]");
        }
    }
}

/// A lane that fails (lane 1's destination shadow is unified memory of another context, which
/// the runtime does not route) leaves lane 0's shadows untouched: every lane is planned first.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_failing_lane_leaves_lane_0_untouched_on_the_gpu() {
    let _serial = serial();
    let s = gpu();
    let other = CudaContext::new_non_primary(0, 0)
        .unwrap()
        .new_stream()
        .unwrap();
    let n = 1024;
    let unified = |s: &Arc<CudaStream>, v: f32| {
        let mut u = unsafe { s.context().alloc_unified::<f32>(n, true) }.unwrap();
        u.as_mut_slice().unwrap().fill(v);
        u
    };
    let x = s.clone_htod(&vec![1.0f32; n]).unwrap();
    let mut y = unified(&s, 0.0);
    let (mut dy0, mut dy1) = (unified(&s, 2.0), unified(&other, 3.0));
    let mut dx0 = s.clone_htod(&vec![0.5f32; n]).unwrap();
    let mut dx1 = s.clone_htod(&vec![0.5f32; n]).unwrap();
    let tape = to_unified_rule(&s)
        .augmented_primal(
            Duplicated::batch(&mut y, [&mut dy0, &mut dy1]),
            Duplicated::batch(&x, [&mut dx0, &mut dx1]),
        )
        .unwrap();
    let e = to_unified_rule(&s)
        .reverse(
            tape,
            Duplicated::batch(&mut y, [&mut dy0, &mut dy1]),
            Duplicated::batch(&x, [&mut dx0, &mut dx1]),
        )
        .unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    s.synchronize().unwrap();
    assert!(
        s.clone_dtoh(&dx0).unwrap().iter().all(|v| *v == 0.5),
        "lane 0's d_src untouched"
    );
    assert!(
        dy0.as_slice().unwrap().iter().all(|v| *v == 2.0),
        "lane 0's cotangent kept"
    );
    assert!(dy1.as_slice().unwrap().iter().all(|v| *v == 3.0));
}

fn device_used() -> usize {
    let (free, total) = rules_runtime::cudarc::driver::result::mem_get_info().unwrap();
    total - free
}

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// A stream per request: the cache keys nothing by stream, so 1000 streams that each run staged
/// reverses and are dropped leave device, pinned and host memory where they were.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_thousand_streams_used_and_dropped_release_their_memory() {
    let _serial = serial();
    let base = gpu();
    let ctx = base.context().clone();
    let n = 1 << 18;
    let seed: Vec<f32> = (0..n).map(|k| value(1, 1, k)).collect();
    // Warm up: the kernels are loaded and the staging buffers exist once.
    let warm = ctx.new_stream().unwrap();
    assert_eq!(staged_round_trip(&warm, &seed), seed);
    drop(warm);
    base.synchronize().unwrap();
    let (dev0, rss0) = (device_used(), rss_bytes());
    let held0 = rules_runtime::testing::cache_held(&ctx);
    for i in 0..1000 {
        let s = ctx.new_stream().unwrap();
        let dx = staged_round_trip(&s, &seed);
        assert!(dx == seed, "stream {i}");
    }
    base.synchronize().unwrap();
    let (dev1, rss1) = (device_used(), rss_bytes());
    let held1 = rules_runtime::testing::cache_held(&ctx);
    eprintln!(
        "device used {dev0} -> {dev1} B, RSS {rss0} -> {rss1} B, cache (contexts, buffers, bytes) {held0:?} -> {held1:?}"
    );
    assert!(
        dev1 <= dev0 + dev0 / 100,
        "device memory grew: {dev0} -> {dev1}"
    );
    assert!(
        rss1 <= rss0 + rss0 / 100 + (4 << 20),
        "host memory grew: {rss0} -> {rss1}"
    );
    assert_eq!(held1, held0, "the cache holds the same buffers");
}

#[test]
fn a_driver_without_a_device_answers_no_device() {
    // Not ignored: it asserts only where it can. Run it on a GPU machine with
    // `CUDA_VISIBLE_DEVICES=` to see the driver load and show no device.
    if !rules_runtime::cuda::driver_available() {
        eprintln!("SKIPPED: no CUDA driver here (NoDriver is checked in the runtime's unit tests)");
        return;
    }
    if std::env::var("CUDA_VISIBLE_DEVICES").as_deref() != Ok("") {
        eprintln!("SKIPPED: run with CUDA_VISIBLE_DEVICES= to hide every device");
        return;
    }
    assert_eq!(rules_runtime::cuda::device_count().unwrap(), 0);
    for e in [
        rules_runtime::cuda::context(0).map(drop).unwrap_err(),
        rules_runtime::cuda::stream(0).map(drop).unwrap_err(),
    ] {
        assert!(
            matches!(
                e,
                Error::NoDevice {
                    ordinal: 0,
                    count: 0
                }
            ),
            "{e}"
        );
    }
    eprintln!("CUDA_VISIBLE_DEVICES= gives NoDevice {{ count: 0 }} as documented");
}

/// The root operations are the one face for shadow work: across two contexts (here two contexts
/// of device 0, the same path as two devices) they route the work as the rules do.
#[test]
#[ignore = "needs a CUDA GPU"]
fn root_operations_work_across_contexts() {
    let _serial = serial();
    let sa = gpu();
    let sb = CudaContext::new_non_primary(0, 0)
        .unwrap()
        .new_stream()
        .unwrap();
    let n = 3001;
    let mut acc = sa.clone_htod(&vec![1.0f32; n]).unwrap();
    let mut src = sb.clone_htod(&vec![0.25f32; n]).unwrap();
    rules_runtime::accumulate_and_zero(rules_runtime::On::stream(&sa), &mut acc, &mut src).unwrap();
    rules_runtime::accumulate(rules_runtime::On::stream(&sb), &mut acc, &src).unwrap();
    let mut other = sb.clone_htod(&vec![2.0f32; n]).unwrap();
    rules_runtime::zero(rules_runtime::On::stream(&sa), &mut other).unwrap();
    sa.synchronize().unwrap();
    sb.synchronize().unwrap();
    assert!(sa.clone_dtoh(&acc).unwrap().iter().all(|v| *v == 1.25));
    assert!(sb.clone_dtoh(&src).unwrap().iter().all(|v| *v == 0.0));
    assert!(sb.clone_dtoh(&other).unwrap().iter().all(|v| *v == 0.0));
}
