//! CUDA graphs: a device-only forward and reverse captured once with stream capture and replayed
//! with new inputs, exact every time; a route that cannot be captured (pageable host memory) is
//! refused with `Error::Capturing` while the capture stays intact. `#[ignore]`d: without a GPU
//! they are reported skipped, never passed.

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError, sys};
use rules_runtime::memory::raw::RawShadow;
use rules_runtime::{CopyRule, RawCopyRule};
use rules_runtime::{Duplicated, Error, MemoryKind, On, accumulate, derivative_rule, zero};
use std::sync::Arc;

/// The tests of this file run one at a time: while a capture lasts, a test beside it that makes
/// the context's first stream through cudarc (which then synchronises the context), or
/// synchronises it otherwise, is refused and invalidates the capture, whatever its mode.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A stream of its own (the context's default, legacy stream cannot be captured), with cudarc's
/// event tracking off, as cudarc requires for capture: with it on, every buffer use waits on an
/// event recorded before the capture, which the driver refuses as a dependency on uncaptured work.
fn gpu() -> Arc<CudaStream> {
    let ctx = rules_runtime::cuda::context(0).unwrap_or_else(|e| {
        panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored")
    });
    // SAFETY: everything in these tests runs on this one stream, so nothing needs cudarc's
    // cross-stream events.
    unsafe { ctx.disable_event_tracking() };
    ctx.new_stream().expect("a new stream")
}

/// Fails the test at the step after which the capture stopped being active.
fn still_capturing(s: &CudaStream, step: &str) {
    let status = s.capture_status();
    assert!(
        matches!(
            status,
            Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE)
        ),
        "capture after {step}: {status:?}"
    );
}

/// Device → device, as a user writes it.
#[derivative_rule(copy)]
fn copy_dd(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// Device → pageable host.
#[derivative_rule(copy)]
fn download_dh(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtoh(src, dst)
}

/// Thread-local: the driver restricts only the capturing thread. In the global mode it would also
/// refuse the allocations and synchronous calls of every other thread of the process (the other
/// tests, running beside this one) and invalidate the capture when one is made.
const MODE: sys::CUstreamCaptureMode =
    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;

fn inputs(round: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7 + round * 13) % 128) as f32 / 64.0 - 1.0)
        .collect()
}

/// The seed's round trip in device memory, `y = copy(x)`, `loss = Σ y²`: the augmented primal,
/// the seed `dy = 2y` (zero, then `y` accumulated twice), and the reverse (`dx += dy; dy ← 0`),
/// plus the forward rule's tangent, all captured into one graph and replayed with new inputs.
#[test]
#[ignore = "needs a GPU"]
fn seed_round_trip_captured_in_a_graph_and_replayed() {
    let _one = serial();
    let s = gpu();
    let n = 1 << 16;
    let mut x = s.clone_htod(&inputs(0, n)).unwrap();
    let mut y = s.alloc_zeros::<f32>(n).unwrap();
    let mut dx = s.alloc_zeros::<f32>(n).unwrap();
    let mut dy = s.alloc_zeros::<f32>(n).unwrap();
    let mut tx = s.clone_htod(&vec![0.5f32; n]).unwrap();
    let mut ty = s.alloc_zeros::<f32>(n).unwrap();
    let on = On::stream(&s);
    // One run outside the capture: kernels loaded, cudarc's buffers settled on this stream.
    let pass = |x: &mut CudaSlice<f32>,
                y: &mut CudaSlice<f32>,
                dx: &mut CudaSlice<f32>,
                dy: &mut CudaSlice<f32>,
                tx: &mut CudaSlice<f32>,
                ty: &mut CudaSlice<f32>,
                capturing: bool| {
        let step = |name: &str| {
            if capturing {
                still_capturing(&s, name)
            }
        };
        copy_dd_rule(&s)
            .forward(
                Duplicated::new(&mut *y, &mut *ty),
                Duplicated::new(&*x, &mut *tx),
            )
            .unwrap();
        step("the forward rule");
        let tape = copy_dd_rule(&s)
            .augmented_primal(
                Duplicated::new(&mut *y, &mut *dy),
                Duplicated::new(&*x, &mut *dx),
            )
            .unwrap();
        step("the augmented primal");
        zero(on, &mut *dx).unwrap();
        zero(on, &mut *dy).unwrap();
        step("zero");
        accumulate(on, &mut *dy, &*y).unwrap();
        accumulate(on, &mut *dy, &*y).unwrap();
        step("accumulate");
        copy_dd_rule(&s)
            .reverse(
                tape,
                Duplicated::new(&mut *y, &mut *dy),
                Duplicated::new(&*x, &mut *dx),
            )
            .unwrap();
        step("the reverse rule");
    };
    pass(&mut x, &mut y, &mut dx, &mut dy, &mut tx, &mut ty, false);
    s.synchronize().unwrap();
    s.begin_capture(MODE).unwrap();
    pass(&mut x, &mut y, &mut dx, &mut dy, &mut tx, &mut ty, true);
    let graph = s
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a graph");
    for round in 1..=10 {
        let xs = inputs(round, n);
        s.memcpy_htod(&xs, &mut x).unwrap();
        let ts: Vec<f32> = xs.iter().map(|v| v * 0.25).collect();
        s.memcpy_htod(&ts, &mut tx).unwrap();
        graph.launch().unwrap();
        s.synchronize().unwrap();
        let want: Vec<f32> = xs.iter().map(|v| 2.0 * v).collect();
        assert_eq!(s.clone_dtoh(&dx).unwrap(), want, "dx == 2x, replay {round}");
        assert_eq!(s.clone_dtoh(&y).unwrap(), xs, "y == x, replay {round}");
        assert_eq!(s.clone_dtoh(&ty).unwrap(), ts, "tangent, replay {round}");
        assert!(s.clone_dtoh(&dy).unwrap().iter().all(|&v| v == 0.0));
    }
}

/// A reverse through pageable host memory waits on the host: during a capture it is refused
/// before anything is enqueued, and the capture goes on to produce a working graph.
#[test]
#[ignore = "needs a GPU"]
fn a_host_route_during_capture_is_a_typed_error_and_the_capture_survives() {
    let _one = serial();
    let s = gpu();
    let n = 1024;
    let x = s.clone_htod(&inputs(3, n)).unwrap();
    let mut dx = s.alloc_zeros::<f32>(n).unwrap();
    let mut y = vec![0.0f32; n];
    let mut dy = vec![1.0f32; n];
    let mut acc = s.alloc_zeros::<f32>(n).unwrap();
    accumulate(On::stream(&s), &mut acc, &x).unwrap(); // kernels loaded outside the capture
    zero(On::stream(&s), &mut acc).unwrap();
    let tape = download_dh_rule(&s)
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    s.synchronize().unwrap();
    s.begin_capture(MODE).unwrap();
    let e = download_dh_rule(&s)
        .reverse(
            tape,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap_err();
    assert!(matches!(e, Error::Capturing { .. }), "{e}");
    accumulate(On::stream(&s), &mut acc, &x).unwrap();
    let graph = s
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("the capture is intact");
    graph.launch().unwrap();
    graph.launch().unwrap();
    s.synchronize().unwrap();
    let want: Vec<f32> = inputs(3, n).iter().map(|v| 2.0 * v).collect();
    assert_eq!(s.clone_dtoh(&acc).unwrap(), want);
    assert_eq!(dy, vec![1.0; n], "nothing was written");
    assert!(s.clone_dtoh(&dx).unwrap().iter().all(|&v| v == 0.0));
}

/// Device → device through raw pointers, as code that manages its own memory writes it.
#[derivative_rule(copy, dst = device, src = device)]
unsafe fn copy_raw(
    stream: &CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    // SAFETY: the caller's contract: both hold `n` elements of device memory.
    unsafe { sys::cuMemcpyDtoDAsync_v2(dst as u64, src as u64, n * 4, stream.cu_stream()).result() }
}

/// A raw device pointer of `n` f32 seen as a shadow.
///
/// # Safety
/// `p` holds `n` f32 of device memory, not otherwise accessed while the shadow lives.
unsafe fn raw(p: *mut f32, n: usize) -> RawShadow<f32> {
    // SAFETY: the caller's contract.
    unsafe { RawShadow::new(MemoryKind::Device, p, 0, n, "a raw device shadow") }.unwrap()
}

/// The other device-reachable kinds in one graph: a raw-pointer rule's augmented primal and
/// reverse, and the shadow operations on unified memory, replayed with new inputs.
#[test]
#[ignore = "needs a GPU"]
fn raw_pointer_rule_and_unified_shadows_captured_in_a_graph() {
    let _one = serial();
    let s = gpu();
    let n = 1 << 12;
    let mut x = s.clone_htod(&inputs(0, n)).unwrap();
    let mut y = s.alloc_zeros::<f32>(n).unwrap();
    let mut dx = s.alloc_zeros::<f32>(n).unwrap();
    let mut dy = s.alloc_zeros::<f32>(n).unwrap();
    // SAFETY: unified memory of `n` f32, written only below.
    let mut u_acc = unsafe { s.context().alloc_unified::<f32>(n, true) }.unwrap();
    let mut u_src = unsafe { s.context().alloc_unified::<f32>(n, true) }.unwrap();
    u_acc.as_mut_slice().unwrap().fill(0.0);
    u_src.as_mut_slice().unwrap().fill(0.0);
    let on = On::stream(&s);
    let ptr = |b: &mut CudaSlice<f32>| {
        use rules_runtime::cudarc::driver::DevicePtrMut;
        let (p, _sync) = b.device_ptr_mut(&s);
        p as *mut f32
    };
    let (px, py, pdx, pdy) = (ptr(&mut x), ptr(&mut y), ptr(&mut dx), ptr(&mut dy));
    let pass = |u_acc: &mut rules_runtime::cudarc::driver::UnifiedSlice<f32>,
                u_src: &mut rules_runtime::cudarc::driver::UnifiedSlice<f32>,
                capturing: bool| {
        let step = |name: &str| {
            if capturing {
                still_capturing(&s, name)
            }
        };
        // SAFETY: all four pointers hold `n` f32 of device memory, used on `s` only.
        unsafe {
            let tape = copy_raw_rule(&s, n)
                .augmented_primal(
                    Duplicated::new(py, pdy),
                    Duplicated::new(px as *const f32, pdx),
                )
                .unwrap();
            step("the raw augmented primal");
            // Seed: dy ← y + y (dy is zero after the previous reverse).
            let mut rdy = raw(pdy, n);
            let ry = raw(py, n);
            zero(on, &mut rdy).unwrap();
            accumulate(on, &mut rdy, &ry).unwrap();
            accumulate(on, &mut rdy, &ry).unwrap();
            step("the seed");
            let mut rdx = raw(pdx, n);
            zero(on, &mut rdx).unwrap();
            copy_raw_rule(&s, n)
                .reverse(
                    tape,
                    Duplicated::new(py, pdy),
                    Duplicated::new(px as *const f32, pdx),
                )
                .unwrap();
            step("the raw reverse");
            // Unified memory: u_src ← dx, then u_acc ← 0; u_acc += u_src; u_src ← 0.
            zero(on, &mut *u_acc).unwrap();
            zero(on, &mut *u_src).unwrap();
            accumulate(on, &mut *u_src, &rdx).unwrap();
            rules_runtime::accumulate_and_zero(on, &mut *u_acc, &mut *u_src).unwrap();
            step("the unified shadow operations");
        }
    };
    pass(&mut u_acc, &mut u_src, false);
    s.synchronize().unwrap();
    s.begin_capture(MODE).unwrap();
    pass(&mut u_acc, &mut u_src, true);
    let graph = s
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a graph");
    for round in 1..=10 {
        let xs = inputs(round, n);
        s.memcpy_htod(&xs, &mut x).unwrap();
        graph.launch().unwrap();
        s.synchronize().unwrap();
        let want: Vec<f32> = xs.iter().map(|v| 2.0 * v).collect();
        assert_eq!(s.clone_dtoh(&dx).unwrap(), want, "dx == 2x, replay {round}");
        assert_eq!(
            u_acc.as_slice().unwrap(),
            &want[..],
            "unified, replay {round}"
        );
        assert!(u_src.as_slice().unwrap().iter().all(|v| v.to_bits() == 0));
        assert!(s.clone_dtoh(&dy).unwrap().iter().all(|v| v.to_bits() == 0));
    }
}

/// `cuda::reserve` allocates page-locked memory and rehearses on its stream: during a capture it
/// is refused before either, and the capture goes on to produce a working graph.
#[test]
#[ignore = "needs a GPU"]
fn reserve_during_capture_is_a_typed_error_and_the_capture_survives() {
    let _one = serial();
    let s = gpu();
    let n = 1024;
    let x = s.clone_htod(&inputs(5, n)).unwrap();
    let mut acc = s.alloc_zeros::<f32>(n).unwrap();
    accumulate(On::stream(&s), &mut acc, &x).unwrap(); // kernels loaded outside the capture
    zero(On::stream(&s), &mut acc).unwrap();
    s.synchronize().unwrap();
    s.begin_capture(MODE).unwrap();
    let e = rules_runtime::cuda::reserve(&s, 4 << 20).unwrap_err();
    assert!(matches!(e, Error::Capturing { .. }), "{e}");
    still_capturing(&s, "cuda::reserve");
    accumulate(On::stream(&s), &mut acc, &x).unwrap();
    let graph = s
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("the capture is intact");
    graph.launch().unwrap();
    s.synchronize().unwrap();
    assert_eq!(s.clone_dtoh(&acc).unwrap(), inputs(5, n));
    // Outside the capture it works, and leaves the caller's memory alone.
    rules_runtime::cuda::reserve(&s, 4 << 20).unwrap();
    s.synchronize().unwrap();
    assert_eq!(s.clone_dtoh(&acc).unwrap(), inputs(5, n));
}
