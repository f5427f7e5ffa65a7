//! GPU regression tests of the promises of README and docs/soundness.md that once
//! failed: borrowed host memory finished with before the call
//! returns, CUDA arrays ordered across streams, `Error::Capturing` before anything is enqueued,
//! the host never blocked by earlier work on the stream, safe example primitives that are safe
//! on their own, and box arithmetic that never panics. The host ones are in `promises.rs`.
//!
//! Each test names the promise it holds, and fails on code that breaks it.
//! Every GPU test is `#[ignore]`d so that a machine without a GPU reports it as *ignored*
//! (skipped), never as passed; on a GPU machine run with `--include-ignored`.
//!
//! Nothing here can hang: a stream is kept busy by a *gate*, a host function enqueued on it that
//! waits until the test opens it, and opens by itself after a bounded time (and when its handle
//! is dropped, so a failing test opens it too); the host-blocking measurements run in a child process
//! that is killed after a bounded time.

use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DevicePtrMut, DriverError, PinnedHostSlice, sys,
};
use rules_runtime::memory::array::CudaArray;
use rules_runtime::{
    Const, CopyRule, Duplicated, Error, On, Pitched, RawCopyRule, RegionRule, accumulate,
    accumulate_region, derivative_rule, fill_region, zero, zero_region,
};
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The tests of this file run one at a time: they keep streams busy and time calls, which other
/// work on the device would disturb.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

/// A stream for stream capture: of a context object of its own with cudarc's event tracking off
/// (cudarc requires it for capture; see gpu_graphs.rs), so other tests' buffers keep theirs.
fn capture_stream() -> Arc<CudaStream> {
    let ctx = rules_runtime::cuda::context(0).unwrap_or_else(|e| {
        panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored")
    });
    // SAFETY: everything on this context object runs on the one stream made here.
    unsafe { ctx.disable_event_tracking() };
    ctx.new_stream().expect("a new stream")
}

/// Thread-local: the capture restricts this thread only (a global one would refuse other threads'
/// allocations and synchronous calls).
const CAPTURE: sys::CUstreamCaptureMode =
    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;

// ---- the gate: a stream kept busy by the host, for a bounded time --------------------------------

struct Gate {
    open: AtomicBool,
    /// The most the host function waits, from when the stream reaches it.
    limit: Duration,
    /// Set by the host function once the stream has reached it.
    reached: AtomicBool,
}

/// An open-on-drop handle to a gate enqueued by [`close_gate`].
struct GateHandle(Arc<Gate>);

impl GateHandle {
    fn open(&self) {
        self.0.open.store(true, Ordering::Release);
    }
}

impl Drop for GateHandle {
    fn drop(&mut self) {
        self.open();
    }
}

/// The host function of a gate: waits until the gate is opened or its limit has passed.
unsafe extern "C" fn wait_at_gate(p: *mut c_void) {
    // SAFETY: `p` is the reference `close_gate` leaked for this one call.
    let gate = unsafe { Arc::from_raw(p as *const Gate) };
    gate.reached.store(true, Ordering::Release);
    let start = Instant::now();
    while !gate.open.load(Ordering::Acquire) && start.elapsed() < gate.limit {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Enqueues a gate on `s`: everything enqueued on `s` after it waits until the handle is opened
/// or dropped, or `limit` has passed (the watchdog: a test never hangs on a gate).
fn close_gate(s: &CudaStream, limit: Duration) -> GateHandle {
    let gate = Arc::new(Gate {
        open: AtomicBool::new(false),
        limit,
        reached: AtomicBool::new(false),
    });
    let p = Arc::into_raw(gate.clone()) as *mut c_void;
    s.context().bind_to_thread().expect("cuCtxSetCurrent");
    // SAFETY: a live stream; the host function makes no CUDA call and takes back `p`.
    let r = unsafe { sys::cuLaunchHostFunc(s.cu_stream(), Some(wait_at_gate), p) };
    if r != sys::cudaError_enum::CUDA_SUCCESS {
        // SAFETY: the host function was not enqueued: `p` is still ours.
        drop(unsafe { Arc::from_raw(p as *const Gate) });
        panic!("cuLaunchHostFunc: {r:?}");
    }
    GateHandle(gate)
}

/// How long a gate holds its stream if the test does not open it.
const GATE: Duration = Duration::from_secs(3);

/// A stream that was busy when a call returned: the gate had not been passed.
fn still_gated(s: &CudaStream) -> bool {
    // SAFETY: a live stream.
    let r = unsafe { sys::cuStreamQuery(s.cu_stream()) };
    r == sys::cudaError_enum::CUDA_ERROR_NOT_READY
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic without a message)".into())
}

// ---- borrowed host memory is finished with on return --------------------------------------------

/// Borrowed host memory is finished with before the call returns. Page-locked
/// memory passed as a plain `&[f32]` (`pinned.as_slice()`) to `accumulate` and
/// `accumulate_region`, on a stream still busy with earlier work: once the call has returned the
/// caller owns the slice again and writes 1000 into it; the accumulator must get the 1 the
/// slice held during the call (today the copy from it is still queued and reads 1000). Whole
/// buffers of 1024 elements and of 4 MiB (below the 8 MiB pipeline threshold), and a 2D box.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_pinned_slice_source_is_read_before_the_call_returns() {
    let _serial = serial();
    let s = gpu();
    let ctx = s.context().clone();
    for n in [1024usize, 1 << 20] {
        // SAFETY: written below before it is read.
        let mut p: PinnedHostSlice<f32> = unsafe { ctx.alloc_pinned(n) }.unwrap();
        p.as_mut_slice().unwrap().fill(1.0);
        let mut acc = s.alloc_zeros::<f32>(n).unwrap();
        // The same call once on an idle stream first: kernels loaded and staging of this size
        // in the pool, so that nothing under the gate waits for the device on its own account.
        accumulate(On::Stream(&s), &mut acc, p.as_slice().unwrap()).unwrap();
        zero(On::Stream(&s), &mut acc).unwrap();
        s.synchronize().unwrap();
        let gate = close_gate(&s, GATE);
        let t0 = Instant::now();
        accumulate(On::Stream(&s), &mut acc, p.as_slice().unwrap()).unwrap();
        let took = t0.elapsed();
        let busy = still_gated(&s);
        // The call has returned: the slice is the caller's again.
        p.as_mut_slice().unwrap().fill(1000.0);
        gate.open();
        s.synchronize().unwrap();
        let got = s.clone_dtoh(&acc).unwrap();
        let wrong = got.iter().filter(|&&v| v != 1.0).count();
        assert_eq!(
            wrong,
            0,
            "accumulate of {n} elements from a pinned slice: {wrong} elements are not 1 (e.g. \
             {}); the call returned after {took:?} with the stream {} and read the slice after \
             it returned, when the caller had written 1000 into it",
            got.iter().find(|&&v| v != 1.0).unwrap(),
            if busy { "still busy" } else { "idle" }
        );
    }

    // A box: 16 × 4 elements at (3, 2) of a 64 × 8 buffer, the same box on both sides.
    let (w, h) = (64usize, 8usize);
    let bx = Pitched::rows(3 + 2 * w, 16, 4, w * size_of::<f32>());
    // SAFETY: written below before it is read.
    let mut p: PinnedHostSlice<f32> = unsafe { ctx.alloc_pinned(w * h) }.unwrap();
    p.as_mut_slice().unwrap().fill(1.0);
    let mut acc = s.alloc_zeros::<f32>(w * h).unwrap();
    accumulate_region(On::Stream(&s), &mut acc, bx, p.as_slice().unwrap(), bx).unwrap();
    zero(On::Stream(&s), &mut acc).unwrap();
    s.synchronize().unwrap();
    let gate = close_gate(&s, GATE);
    let t0 = Instant::now();
    accumulate_region(On::Stream(&s), &mut acc, bx, p.as_slice().unwrap(), bx).unwrap();
    let took = t0.elapsed();
    p.as_mut_slice().unwrap().fill(1000.0);
    gate.open();
    s.synchronize().unwrap();
    let got = s.clone_dtoh(&acc).unwrap();
    let inside = rules_tests::box_indices(&bx, size_of::<f32>());
    for (i, v) in got.iter().enumerate() {
        let want = if inside.contains(&i) { 1.0 } else { 0.0 };
        assert_eq!(
            *v, want,
            "accumulate_region from a pinned slice, element {i}: the call returned after \
             {took:?} and read the slice after it returned, when the caller had written 1000"
        );
    }
}

// ---- CUDA arrays carry their order across streams -----------------------------------------------

/// CUDA arrays carry their order across streams. A box of an array holding 5 is
/// zeroed on stream 1 (busy with earlier work, so the zeroing is still queued), then read on
/// stream 2, by a download of the whole array and by an accumulation into device memory: both
/// must see 0 (today stream 2 does not wait for stream 1 and reads 5).
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_array_zeroed_on_one_stream_reads_zero_on_another() {
    let _serial = serial();
    let s = gpu();
    let ctx = s.context().clone();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let (w, h) = (64usize, 32usize);
    let mut arr = CudaArray::<f32>::zeroed(&s1, w, h, 1).unwrap();
    let bx = arr.region((8, 4, 0), (16, 8, 1));
    // Every kernel used below runs once first (nothing lazily loaded under the gate).
    fill_region(On::Stream(&s1), &mut arr, bx, 5.0).unwrap();
    zero_region(On::Stream(&s1), &mut arr, bx).unwrap();
    let mut lin = s2.alloc_zeros::<f32>(w * h).unwrap();
    let lin_box = Pitched::rows(8 + 4 * w, 16, 8, w * size_of::<f32>());
    s1.synchronize().unwrap();
    accumulate_region(On::Stream(&s2), &mut lin, lin_box, &arr, bx).unwrap();
    s2.synchronize().unwrap();

    // Read 1: the whole array downloaded on stream 2.
    fill_region(On::Stream(&s1), &mut arr, bx, 5.0).unwrap();
    s1.synchronize().unwrap();
    let gate = close_gate(&s1, GATE);
    zero_region(On::Stream(&s1), &mut arr, bx).unwrap();
    let seen = arr.to_host(&s2).unwrap();
    gate.open();
    s1.synchronize().unwrap();
    let fives = seen.iter().filter(|&&v| v == 5.0).count();
    assert_eq!(
        fives, 0,
        "the download on stream 2 read {fives} elements of 5: the zeroing queued on stream 1 \
         before it was not waited for"
    );
    assert!(arr.to_host(&s1).unwrap().iter().all(|&v| v == 0.0));

    // Read 2: the box accumulated into device memory on stream 2.
    fill_region(On::Stream(&s1), &mut arr, bx, 5.0).unwrap();
    s1.synchronize().unwrap();
    let mut lin = s2.alloc_zeros::<f32>(w * h).unwrap();
    s2.synchronize().unwrap();
    let gate = close_gate(&s1, GATE);
    zero_region(On::Stream(&s1), &mut arr, bx).unwrap();
    accumulate_region(On::Stream(&s2), &mut lin, lin_box, &arr, bx).unwrap();
    gate.open();
    s2.synchronize().unwrap();
    s1.synchronize().unwrap();
    let got = s2.clone_dtoh(&lin).unwrap();
    let fives = got.iter().filter(|&&v| v == 5.0).count();
    assert_eq!(
        fives, 0,
        "accumulate_region on stream 2 added {fives} elements of 5 from the array box: the \
         zeroing queued on stream 1 before it was not waited for"
    );
    assert!(got.iter().all(|&v| v == 0.0), "{got:?}");
}

// ---- Error::Capturing before anything is enqueued -----------------------------------------------

/// Device → device, restoring the destination in the reverse.
#[derivative_rule(copy, restore)]
fn copy_dd_restoring(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// Device rows into a box of an array, counting its calls.
#[derivative_rule(copy3d)]
#[allow(clippy::too_many_arguments)]
fn to_array_counted(
    stream: &Arc<CudaStream>,
    #[inert] calls: &AtomicUsize,
    #[dst] dst: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[dst_z] z: usize,
    #[src] src: &CudaSlice<f32>,
    #[src_pitch] src_pitch: usize,
    #[src_slice_height] src_rows: usize,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
) -> rules_runtime::Result<()> {
    calls.fetch_add(1, Ordering::SeqCst);
    rules_tests::arrays::to_array(
        stream, dst, x, y, z, src, src_pitch, src_rows, width, height, depth,
    )
}

/// Ends the capture on `s` and launches what it recorded, if anything. Returns the capture's
/// outcome in words (an invalidated capture is reported, not a failure here).
fn end_and_launch(s: &Arc<CudaStream>) -> Result<&'static str, DriverError> {
    match s.end_capture(sys::CUgraphInstantiate_flags(0))? {
        Some(g) => {
            g.launch()?;
            s.synchronize()?;
            Ok("a graph, launched")
        }
        None => Ok("no graph"),
    }
}

/// `Error::Capturing` before anything is enqueued. (a) The reverse of a
/// `copy, restore` rule on device buffers during a capture returns `Err(Capturing)` and records
/// nothing: after the capture ends and its graph (if any) is launched, dx, dy and y are as they
/// were (today every lane's shadow work is recorded first, so the graph moves dy into dx, and
/// the restore of y is lost). (b) The forward of a rule whose destination shadow is a CUDA array,
/// during a capture: when it returns `Err(Capturing)`, the primal did not run (today it ran once).
#[test]
#[ignore = "needs a CUDA GPU"]
fn restore_and_array_shadows_during_a_capture_record_nothing() {
    let _serial = serial();
    let s = capture_stream();
    let n = 4096;
    let xs: Vec<f32> = (0..n).map(|i| (i % 64) as f32 / 8.0).collect();
    let old: Vec<f32> = (0..n).map(|i| -1.0 - (i % 7) as f32).collect();
    let x = s.clone_htod(&xs).unwrap();
    let mut y = s.clone_htod(&old).unwrap();
    let mut dx = s.alloc_zeros::<f32>(n).unwrap();
    let mut dy = s.alloc_zeros::<f32>(n).unwrap();
    // Once outside the capture: kernels loaded, the saved box's pool warm.
    let t = copy_dd_restoring_rule(&s)
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    copy_dd_restoring_rule(&s)
        .reverse(
            t,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(
        s.clone_dtoh(&y).unwrap(),
        old,
        "the restore outside a capture"
    );

    // (a) The augmented primal outside the capture, the reverse inside it.
    let tape = copy_dd_restoring_rule(&s)
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    s.memcpy_htod(&vec![1.0f32; n], &mut dy).unwrap();
    s.synchronize().unwrap();
    s.begin_capture(CAPTURE).unwrap();
    let r = copy_dd_restoring_rule(&s).reverse(
        tape,
        Duplicated::new(&mut y, &mut dy),
        Duplicated::new(&x, &mut dx),
    );
    let ended = end_and_launch(&s);
    s.synchronize().unwrap();
    let (dx_now, dy_now, y_now) = (
        s.clone_dtoh(&dx).unwrap(),
        s.clone_dtoh(&dy).unwrap(),
        s.clone_dtoh(&y).unwrap(),
    );
    assert!(
        matches!(r, Err(Error::Capturing { .. })),
        "the reverse of a `restore` rule during a capture: {r:?}"
    );
    assert!(
        ended.is_ok(),
        "the capture was broken by a call that returned Err(Capturing): {ended:?}"
    );
    assert!(
        dx_now.iter().all(|&v| v == 0.0) && dy_now.iter().all(|&v| v == 1.0),
        "the refused reverse recorded shadow work into the capture (after launching its graph: \
         dx[0] = {}, dy[0] = {}; expected 0 and 1, untouched)",
        dx_now[0],
        dy_now[0]
    );
    assert_eq!(
        y_now, xs,
        "y changed (it holds the copy until a reverse restores it)"
    );

    // (b) An array shadow in a forward during a capture.
    let (w, h) = (32usize, 16usize);
    let mut a = CudaArray::<f32>::zeroed(&s, w, h, 1).unwrap();
    let mut da = CudaArray::<f32>::zeroed(&s, w, h, 1).unwrap();
    let lin = s.clone_htod(&vec![2.0f32; w * h]).unwrap();
    let calls = AtomicUsize::new(0);
    let rule = || to_array_counted_rule(&s, &calls, 0, 0, 0, w * 4, h, w, h, 1);
    // Outside the capture: it runs (primal once, the shadow zeroed).
    rule()
        .forward(Duplicated::new(&mut a, &mut da), Const(&lin))
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(calls.swap(0, Ordering::SeqCst), 1);
    s.begin_capture(CAPTURE).unwrap();
    let r = rule().forward(Duplicated::new(&mut a, &mut da), Const(&lin));
    let ran = calls.load(Ordering::SeqCst);
    let ended = end_and_launch(&s);
    match r {
        Err(Error::Capturing { .. }) => assert_eq!(
            ran, 0,
            "the forward returned Err(Capturing) after running the primal {ran} time(s) into the \
             capture (capture: {ended:?})"
        ),
        Ok(()) => assert!(ended.is_ok(), "{ended:?}"),
        Err(e) => panic!("the forward during a capture: {e}"),
    }
}

// ---- routes that wait on the host refuse a capture ----------------------------------------------

/// Device → pageable host, counting its calls.
#[derivative_rule(copy)]
fn download_counted(
    stream: &Arc<CudaStream>,
    #[inert] calls: &AtomicUsize,
    #[dst] dst: &mut [f32],
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    calls.fetch_add(1, Ordering::SeqCst);
    stream.memcpy_dtoh(src, dst)
}

/// Pageable host → device, counting its calls.
#[derivative_rule(copy)]
fn upload_counted(
    stream: &Arc<CudaStream>,
    #[inert] calls: &AtomicUsize,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    calls.fetch_add(1, Ordering::SeqCst);
    stream.memcpy_htod(src, dst)
}

/// Routes that wait on the host return `Error::Capturing` before anything is
/// enqueued (docs/graphs.md). During a capture, the forward of a device → pageable copy and the
/// augmented primal of a pageable → device copy are refused before their primal runs (today both
/// return `Ok` and the capture records a pageable copy).
#[test]
#[ignore = "needs a CUDA GPU"]
fn pageable_copies_during_a_capture_are_refused_before_the_primal() {
    let _serial = serial();
    let s = capture_stream();
    let n = 1024;
    let x = s.clone_htod(&vec![0.5f32; n]).unwrap();
    let mut tx = s.clone_htod(&vec![0.25f32; n]).unwrap();
    let (mut y, mut ty) = (vec![0.0f32; n], vec![0.0f32; n]);
    let calls = AtomicUsize::new(0);
    s.synchronize().unwrap();

    s.begin_capture(CAPTURE).unwrap();
    let r = download_counted_rule(&s, &calls).forward(
        Duplicated::new(&mut y[..], &mut ty[..]),
        Duplicated::new(&x, &mut tx),
    );
    let ran = calls.swap(0, Ordering::SeqCst);
    let ended = s
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .map(|g| g.is_some());
    let _ = s.synchronize();
    eprintln!("device → pageable forward: {r:?}, primal calls {ran}, capture: {ended:?}");
    assert!(
        matches!(r, Err(Error::Capturing { .. })),
        "the forward of a device → pageable copy during a capture: {r:?} (primal calls: {ran})"
    );
    assert_eq!(
        ran, 0,
        "the primal ran during the capture before Err(Capturing)"
    );

    let xs = vec![0.75f32; n];
    let mut dxs = vec![0.0f32; n];
    let mut yd = s.alloc_zeros::<f32>(n).unwrap();
    let mut dyd = s.alloc_zeros::<f32>(n).unwrap();
    s.synchronize().unwrap();
    s.begin_capture(CAPTURE).unwrap();
    let r = upload_counted_rule(&s, &calls)
        .augmented_primal(
            Duplicated::new(&mut yd, &mut dyd),
            Duplicated::new(&xs[..], &mut dxs[..]),
        )
        .map(drop);
    let ran = calls.swap(0, Ordering::SeqCst);
    let ended = s
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .map(|g| g.is_some());
    let _ = s.synchronize();
    eprintln!("pageable → device augmented primal: {r:?}, primal calls {ran}, capture: {ended:?}");
    assert!(
        matches!(r, Err(Error::Capturing { .. })),
        "the augmented primal of a pageable → device copy during a capture: {r:?} (primal \
         calls: {ran})"
    );
    assert_eq!(
        ran, 0,
        "the primal ran during the capture before Err(Capturing)"
    );
}

// ---- the host is never blocked by earlier work --------------------------------------------------

/// Device → device through raw pointers.
#[derivative_rule(copy, dst = device, src = device)]
unsafe fn copy_raw_dd(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract: both hold `n` f32 of device memory.
    unsafe { sys::cuMemcpyDtoDAsync_v2(dst as u64, src as u64, n * 4, stream.cu_stream()) }.result()
}

/// The device address of a cudarc buffer, as a raw pointer used on `s` only.
fn raw_ptr(b: &mut CudaSlice<f32>, s: &Arc<CudaStream>) -> *mut f32 {
    let (p, _recorded) = b.device_ptr_mut(s);
    p as *mut f32
}

/// The reverse of [`copy_raw_dd`] over `n` elements on `s`, called while `s` is held by a gate
/// (`gated`) or idle. Checks the values and returns how long the call took to return.
fn timed_raw_reverse(s: &Arc<CudaStream>, n: usize, gated: bool) -> Duration {
    let mut x = s.clone_htod(&vec![0.5f32; n]).unwrap();
    let mut y = s.alloc_zeros::<f32>(n).unwrap();
    let mut dx = s.clone_htod(&vec![0.25f32; n]).unwrap();
    let mut dy = s.alloc_zeros::<f32>(n).unwrap();
    let (px, py, pdx, pdy) = (
        raw_ptr(&mut x, s),
        raw_ptr(&mut y, s),
        raw_ptr(&mut dx, s),
        raw_ptr(&mut dy, s),
    );
    // SAFETY: four device buffers of `n` f32, used on `s` only while they live.
    let tape = unsafe {
        copy_raw_dd_rule(s, n).augmented_primal(
            Duplicated::new(py, pdy),
            Duplicated::new(px as *const f32, pdx),
        )
    }
    .unwrap();
    s.memcpy_htod(&vec![1.0f32; n], &mut dy).unwrap();
    s.synchronize().unwrap();
    // The gate's own limit is the watchdog: 10 s, then the stream goes on by itself.
    let gate = gated.then(|| close_gate(s, Duration::from_secs(10)));
    let t0 = Instant::now();
    // SAFETY: as above.
    let r = unsafe {
        copy_raw_dd_rule(s, n).reverse(
            tape,
            Duplicated::new(py, pdy),
            Duplicated::new(px as *const f32, pdx),
        )
    };
    let took = t0.elapsed();
    drop(gate);
    s.synchronize().unwrap();
    r.unwrap();
    assert!(
        s.clone_dtoh(&dx).unwrap().iter().all(|&v| v == 1.25),
        "dx += dy"
    );
    assert!(
        s.clone_dtoh(&dy).unwrap().iter().all(|&v| v == 0.0),
        "dy ← 0"
    );
    took
}

/// The scenario variable of [`item_6_child`].
const ITEM6: &str = "RULES_TESTS_ITEM6_SCENARIO";

/// Not a test of its own: the process that [`the_host_is_not_blocked_while_the_stream_is_busy`]
/// and [`the_host_is_not_blocked_by_a_first_call_on_a_busy_stream`] start, so that "first" means
/// first in a fresh process whatever ran before. Without its variable it does nothing.
#[test]
#[ignore = "needs a CUDA GPU (a helper process of the host-blocking tests)"]
fn item_6_child() {
    let Ok(scenario) = std::env::var(ITEM6) else {
        eprintln!("item_6_child: runs only as the child of the host-blocking tests");
        return;
    };
    let s = gpu();
    let big = 16 << 20; // 64 MiB of f32
    let report = |what: &str, d: Duration| println!("ITEM6 {what} {}", d.as_secs_f64());
    match scenario.as_str() {
        "sizes" => {
            report("warm-1MiB", timed_raw_reverse(&s, 1 << 18, false));
            report("gated-1MiB", timed_raw_reverse(&s, 1 << 18, true));
            report("gated-64MiB", timed_raw_reverse(&s, big, true));
        }
        "first-idle" => report("first-idle-64MiB", timed_raw_reverse(&s, big, false)),
        "first-gated" => report("first-gated-64MiB", timed_raw_reverse(&s, big, true)),
        other => panic!("unknown scenario {other}"),
    }
}

/// Runs [`item_6_child`] with `scenario` in a fresh process (killed after 120 s) and returns
/// its timings by name.
fn run_item_6_child(scenario: &str) -> Vec<(String, f64)> {
    use std::io::Read;
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "item_6_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ITEM6, scenario)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the test binary itself");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).ok();
    child.stderr.take().unwrap().read_to_string(&mut err).ok();
    let ok = status.is_some_and(|s| s.success());
    assert!(
        ok,
        "host-blocking child ({scenario}) {}:\n{out}\n{err}",
        status.map_or("killed after 120 s".into(), |s| format!("failed: {s}"))
    );
    out.lines()
        // libtest may print "test item_6_child ... " on the same line before the first one.
        .filter_map(|l| l.split_once("ITEM6 ").map(|(_, rest)| rest))
        .filter_map(|l| {
            let (name, secs) = l.split_once(' ')?;
            Some((name.to_string(), secs.parse().ok()?))
        })
        .collect()
}

/// The host is never blocked by earlier work on the stream. The reverse of a
/// raw device-pointer copy rule, called while its stream is held by a gate (a host function that
/// waits for the test, 10 s at most), returns at once: at 1 MiB (which it does today) and at
/// 64 MiB, past the 32 MiB split into an accumulate and a memset (today it returns only when the
/// gate opens). Run in a fresh process; values checked after the stream is released.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_host_is_not_blocked_while_the_stream_is_busy() {
    let _serial = serial();
    let _ = gpu();
    let t = run_item_6_child("sizes");
    eprintln!("host-blocking timings (s): {t:?}");
    assert_eq!(t.len(), 3, "{t:?}");
    for (name, secs) in t.iter().filter(|(n, _)| n.starts_with("gated")) {
        assert!(
            *secs < 2.0,
            "{name}: the reverse took {secs:.3} s to return while its stream was busy with \
             earlier work (the gate opens after 10 s): the host waited for the stream"
        );
    }
}

/// A first call: in a fresh process, the first reverse of a 64 MiB raw
/// device-pointer copy (kernels loaded, pool made) on a stream held by a gate returns within
/// 2 s of the same first call on an idle stream (measured first, in another fresh process: the
/// loading itself may take a while, waiting for the gate may not).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_host_is_not_blocked_by_a_first_call_on_a_busy_stream() {
    let _serial = serial();
    let _ = gpu();
    let idle = run_item_6_child("first-idle");
    let gated = run_item_6_child("first-gated");
    eprintln!("first calls (s): idle {idle:?}, gated {gated:?}");
    assert!(idle.len() == 1 && gated.len() == 1, "{idle:?} {gated:?}");
    let (idle, gated) = (idle[0].1, gated[0].1);
    assert!(
        gated < idle + 2.0,
        "a first reverse on a busy stream took {gated:.3} s to return, against {idle:.3} s on \
         an idle one (the gate opens after 10 s): the host waited for the stream"
    );
}

// ---- safe primitives are safe on their own ------------------------------------------------------

/// The workspace's safe primitives are safe on their own. Called directly (not
/// through a rule), `download_array` of a 128 × 128 array into a 16-element slice, and
/// `from_array` of a 128 × 128 box into one, return an error and write nothing past the slice;
/// `upload_array` and `to_array` from a 16-element slice return an error. The slices are the
/// first 16 elements of a buffer large enough for the whole array, filled with a sentinel, so
/// that today's out-of-bounds write lands in memory the test owns and is seen, not a heap
/// corruption.
#[test]
#[ignore = "needs a CUDA GPU"]
fn example_array_primitives_check_their_slices() {
    use rules_tests::arrays::{download_array, from_array, to_array, upload_array};
    let _serial = serial();
    let s = gpu();
    let (w, h) = (128usize, 128usize);
    let mut arr = CudaArray::<f32>::new(s.context(), w, h, 1).unwrap();
    arr.copy_from_host(&s, &vec![3.0f32; w * h]).unwrap();
    const SENTINEL: f32 = -7.0;
    let mut failures = Vec::new();

    let mut host = vec![SENTINEL; w * h + 64];
    let r = download_array(&s, &mut host[..16], &arr);
    s.synchronize().unwrap();
    let past = host[16..].iter().filter(|&&v| v != SENTINEL).count();
    if past > 0 || r.is_ok() {
        failures.push(format!(
            "download_array into 16 elements: {r:?}, {past} elements past the slice overwritten"
        ));
    }

    let mut host = vec![SENTINEL; w * h + 64];
    let r = from_array(&s, &mut host[..16], w * 4, h, &arr, 0, 0, 0, w, h, 1);
    s.synchronize().unwrap();
    let past = host[16..].iter().filter(|&&v| v != SENTINEL).count();
    if past > 0 || r.is_ok() {
        failures.push(format!(
            "from_array of a {w} × {h} box into 16 elements: {r:?}, {past} elements past the \
             slice overwritten"
        ));
    }

    let host = vec![1.0f32; w * h + 64];
    let r = upload_array(&s, &mut arr, &host[..16]);
    s.synchronize().unwrap();
    if r.is_ok() {
        failures.push(format!("upload_array from 16 elements: {r:?}"));
    }
    let r = to_array(&s, &mut arr, 0, 0, 0, &host[..16], w * 4, h, w, h, 1);
    s.synchronize().unwrap();
    if r.is_ok() {
        failures.push(format!(
            "to_array of a {w} × {h} box from 16 elements: {r:?}"
        ));
    }
    assert!(
        failures.is_empty(),
        "safe primitives of tests/src/arrays.rs trust lengths nobody checked:\n{}",
        failures.join("\n")
    );
}

// ---- box arithmetic never panics ----------------------------------------------------------------

/// Box arithmetic never panics. `CudaArray::region` at an origin whose offset
/// overflows (debug builds panic today) gives a box that every operation refuses (or refuses it
/// itself), never a panic; a box that cannot lie in the array is never zeroed.
#[test]
#[ignore = "needs a CUDA GPU"]
fn array_boxes_at_huge_origins_are_not_a_panic() {
    let _serial = serial();
    let s = gpu();
    let (w, h) = (64usize, 32usize);
    let mut arr = CudaArray::<f32>::new(s.context(), w, h, 1).unwrap();
    arr.copy_from_host(&s, &vec![3.0f32; w * h]).unwrap();
    for origin in [
        (usize::MAX, usize::MAX, usize::MAX),
        (0, usize::MAX, 0),
        (0, 0, usize::MAX / 2),
        (usize::MAX - 1, 0, 0),
    ] {
        let r = catch_unwind(AssertUnwindSafe(|| arr.region(origin, (1, 1, 1))));
        let bx = r.unwrap_or_else(|p| {
            panic!(
                "CudaArray::region({origin:?}, (1, 1, 1)) panicked ({}); it must not",
                panic_text(&*p)
            )
        });
        let z = catch_unwind(AssertUnwindSafe(|| {
            zero_region(On::Stream(&s), &mut arr, bx)
        }));
        match z {
            Ok(Err(_)) => {}
            Ok(Ok(())) => panic!("a box at {origin:?} ({bx:?}) was zeroed in a {w} × {h} array"),
            Err(p) => panic!(
                "zero_region of the box at {origin:?} panicked ({})",
                panic_text(&*p)
            ),
        }
    }
    s.synchronize().unwrap();
    assert!(
        arr.to_host(&s).unwrap().iter().all(|&v| v == 3.0),
        "the array is untouched"
    );
}
