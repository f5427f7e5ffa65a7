//! What safe code can make the `std::autodiff` bridges do, and the promises that hold against it:
//! an empty box or a zero length past the buffer never reaches the primitive (`Pitched::check`
//! checks empty boxes), streams are read from primal handles only, a capturing stream is refused,
//! a bridge waits for its stream when its rule panics, a panic payload is dropped under
//! `catch_unwind`, and `reserve` takes any size and capture mode (the call fingerprint's own test is
//! `rules/tests_fingerprint.rs`). Each test asserts the promise; a "Hazard" note says
//! what would happen without the guard (UB under Miri for most). GPU tests: `--ignored misuse_gpu`.
//!
//! Host tests go through the generated safe `<name>_ad` functions (the rules below carry
//! `autodiff`), exactly as a user's code would, and assert the promises of docs/soundness.md and
//! docs/autodiff.md. The primitives are written as the project's own are
//! (`examples/autodiff/src/rules.rs`, `tests_region.rs`), and record what they are asked to do
//! so that a native run shows the hole; Miri shows the UB itself.
use super::*;
use crate::autodiff::take_error;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// How far past the end of their buffer the primitives below were asked to place a pointer
/// (0: never). Per test thread would be nicer; tests using it take `SERIAL`.
static OUT_OF_BOUNDS: AtomicUsize = AtomicUsize::new(0);
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
/// The length of the buffer the primitive was given (the test knows it; the primitive does not).
static LEN: AtomicUsize = AtomicUsize::new(0);

fn note(elems: usize) {
    let len = LEN.load(Relaxed);
    if elems > len {
        OUT_OF_BOUNDS.fetch_max(elems - len, Relaxed);
    }
}

/// The example's `host_copy2d`, verbatim but for the bookkeeping.
#[rules_macro::derivative_rule(copy2d, dst = host, src = host, crate = crate, autodiff)]
unsafe fn rv_rows(
    #[dst] dst: *mut f32,
    #[dst_pitch] dp: usize,
    #[src] src: *const f32,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) {
    for r in 0..h {
        note(r * dp / 4);
        // SAFETY: the rule's contract (each row of the boxes lies in its buffer).
        unsafe { core::ptr::copy_nonoverlapping(src.add(r * sp / 4), dst.add(r * dp / 4), w) };
    }
}

/// The example's `set_device`, on host memory: the base pointer first, then `n` elements.
#[rules_macro::derivative_rule(memset, dst = host, crate = crate, autodiff)]
unsafe fn rv_set(
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[len] n: usize,
    #[value] bits: u32,
) {
    note(at);
    // SAFETY: the rule's contract (as `set_device`: `dst.add(at)`, then `n` elements).
    let base = unsafe { dst.add(at) };
    for i in 0..n {
        // SAFETY: as above.
        unsafe { base.add(i).write(f32::from_bits(bits)) }
    }
}

/// The same shape for a copy: a plain `copy` refuses `offset > len` even for `n = 0`.
#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate, autodiff)]
unsafe fn rv_copy(
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[src] src: *const f32,
    #[len] n: usize,
) {
    note(at);
    // SAFETY: the rule's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst.add(at), n) }
}

/// `rv_copy` with `restore`: bridged as a region rule (its boxes `Pitched::linear(at, n)`).
#[rules_macro::derivative_rule(copy, dst = host, src = host, restore, crate = crate, autodiff)]
unsafe fn rv_copy_restore(
    #[dst] dst: *mut f32,
    #[dst_offset] at: usize,
    #[src] src: *const f32,
    #[len] n: usize,
) {
    note(at);
    // SAFETY: the rule's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst.add(at), n) }
}

fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Held: the linear copy's offset is checked against the buffer even when nothing is copied.
#[test]
fn misuse_linear_copy_with_n_0_refuses_an_offset_past_the_end() {
    let _s = serial();
    let (mut y, x) = ([0.0f32; 4], [1.0f32; 4]);
    LEN.store(y.len(), Relaxed);
    OUT_OF_BOUNDS.store(0, Relaxed);
    rv_copy_ad(&mut y, 1 << 20, &x, 0);
    let text = error_text();
    assert!(text.contains("length mismatch"), "{text}");
    assert_eq!(
        OUT_OF_BOUNDS.load(Relaxed),
        0,
        "the primitive was not called"
    );
}

/// Hazard: a memset of 0 elements at an offset far past its buffer is accepted and the primitive
/// is called with it; the example's `set_device` / `fill_device` (and this host twin) compute
/// `dst.add(at)` first: out-of-bounds pointer arithmetic (UB; Miri: "out-of-bounds pointer
/// arithmetic"), from safe code. A `copy` refuses the same offset (test above).
#[test]
fn misuse_empty_memset_box_far_past_the_buffer_reaches_the_primitive() {
    let _s = serial();
    let mut y = [1.0f32; 4];
    LEN.store(y.len(), Relaxed);
    OUT_OF_BOUNDS.store(0, Relaxed);
    rv_set_ad(&mut y, 1 << 20, 0, 0);
    let text = error_text();
    let oob = OUT_OF_BOUNDS.load(Relaxed);
    assert!(
        !text.is_empty() || oob == 0,
        "accepted (no error) and the primitive placed a pointer {oob} elements past the end"
    );
}

/// Hazard: a 2D box of width 0 skips every check (`Pitched::check` returns early for an empty
/// box: no pitch, height or offset check), and the primitive is still called with its height and
/// pitches: the example's `host_copy2d` steps `dst.add(r * dp / 4)` for every row: out of bounds
/// (UB under Miri), from safe code.
#[test]
fn misuse_width_0_box_with_rows_far_apart_reaches_the_primitive() {
    let _s = serial();
    let (mut y, x) = ([1.0f32; 4], [2.0f32; 4]);
    LEN.store(y.len(), Relaxed);
    OUT_OF_BOUNDS.store(0, Relaxed);
    rv_rows_ad(&mut y, 1 << 20, &x, 1 << 20, 0, 3);
    let text = error_text();
    let oob = OUT_OF_BOUNDS.load(Relaxed);
    assert!(
        !text.is_empty() || oob == 0,
        "accepted (no error) and the primitive placed a row pointer {oob} elements past the end"
    );
}

/// Hazard: the same call as `misuse_linear_copy_with_n_0_refuses_an_offset_past_the_end`, on the
/// same rule with `restore` (bridged through `Region`): accepted, the primitive called with the
/// offset (UB under Miri at `dst.add(at)`).
#[test]
fn misuse_copy_with_restore_n_0_offset_past_the_end_reaches_the_primitive() {
    let _s = serial();
    let (mut y, x) = ([0.0f32; 4], [1.0f32; 4]);
    LEN.store(y.len(), Relaxed);
    OUT_OF_BOUNDS.store(0, Relaxed);
    rv_copy_restore_ad(&mut y, 1 << 20, &x, 0);
    let text = error_text();
    let oob = OUT_OF_BOUNDS.load(Relaxed);
    assert!(
        !text.is_empty() || oob == 0,
        "accepted (no error) and the primitive placed a pointer {oob} elements past the end"
    );
}

/// Held: a shadow handle swapped into another pair (the `&mut AdBuf` of `split`) is refused.
#[test]
fn misuse_swapped_shadow_handles_are_refused() {
    let (mut a, mut da) = (vec![1.0f32, 2.0, 3.0], vec![0.0f32; 3]);
    let (mut b, mut db) = (vec![4.0f32, 5.0, 6.0], vec![0.0f32; 3]);
    let mut pa = AdPair::new_host(&mut a, &mut da).unwrap();
    {
        let mut pb = AdPair::new_host(&mut b, &mut db).unwrap();
        core::mem::swap(pa.split().1, pb.split().1);
    }
    let (ha, hda) = pa.split();
    let (ha, hda): (*const AdBuf<f32>, *const AdBuf<f32>) = (ha, hda);
    // SAFETY: live handles (what Enzyme would pass for `df(.., ha, hda)`).
    let r = unsafe {
        Side::Handle(ha, hda, MemoryKind::Host)
            .resolve("x", |w, len| super::rules::linear_fits(w, 0, 3, len))
    };
    let e = r.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("not this buffer's shadow"), "{e}");
}

/// Auto traits: handles hold raw pointers, so neither they nor pairs cross threads.
#[test]
fn misuse_handles_are_not_send_or_sync() {
    // The autoref trick: `Probe<T>::IS` resolves to the inherent `true` only when `T: Send`.
    struct Probe<T: ?Sized>(core::marker::PhantomData<T>);
    trait No {
        const IS: bool = false;
    }
    impl<T: ?Sized> No for Probe<T> {}
    #[allow(dead_code)]
    impl<T: ?Sized + Send> Probe<T> {
        const IS: bool = true;
    }
    struct SyncProbe<T: ?Sized>(core::marker::PhantomData<T>);
    impl<T: ?Sized> No for SyncProbe<T> {}
    #[allow(dead_code)]
    impl<T: ?Sized + Sync> SyncProbe<T> {
        const IS: bool = true;
    }
    const { assert!(<Probe<Vec<f32>>>::IS && <SyncProbe<Vec<f32>>>::IS) }; // the probe works
    const { assert!(!<Probe<AdBuf<f32>>>::IS && !<SyncProbe<AdBuf<f32>>>::IS) };
    const { assert!(!<Probe<AdPair<'static, f32>>>::IS && !<SyncProbe<AdPair<'static, f32>>>::IS) };
}

/// Hazard (GPU, run with `--ignored misuse_gpu`): a primitive that enqueues work and then panics.
/// The panic is caught in `record`, but `finished` (the bridge's wait for its stream) never runs:
/// the bridge returns with the copy still running on memory the pair borrows. A pair then
/// forgotten (`mem::forget`, safe) has recorded no event on the buffers, so cudarc's next host
/// read (or free) of the pinned buffer does not wait for the copy: a data race from safe code.
#[rules_macro::derivative_rule(copy, dst = pinned, src = device, crate = crate, autodiff)]
unsafe fn rv_dtoh_then_panic(
    stream: &cudarc::driver::CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> core::result::Result<(), cudarc::driver::DriverError> {
    // SAFETY: the rule's contract (pinned and device pointers of `n` elements on `stream`).
    unsafe {
        cudarc::driver::sys::cuMemcpyDtoHAsync_v2(dst.cast(), src as u64, n * 4, stream.cu_stream())
            .result()?
    };
    panic!("the primitive failed after enqueueing its copy");
}

#[test]
#[ignore = "needs a GPU"]
fn misuse_gpu_a_panic_after_enqueue_leaves_the_copy_running() {
    use cudarc::driver::sys;
    let s = crate::driver::stream(0).expect("a GPU");
    let n = 64 << 20; // 256 MiB: tens of milliseconds of device → host copy
    let ctx = s.context().clone();
    // SAFETY: pinned allocation of `n` f32, zeroed by the host below.
    let mut h = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    h.as_mut_slice().unwrap().fill(0.0);
    let mut dh = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    let mut d = s.alloc_zeros::<f32>(n).unwrap();
    let mut dd = s.alloc_zeros::<f32>(n).unwrap();
    s.synchronize().unwrap();
    let mut ph = AdPair::new(&mut h, &mut dh, &s).unwrap();
    let mut pd = AdPair::new(&mut d, &mut dd, &s).unwrap();
    rv_dtoh_then_panic_ad(ph.split().0, pd.split().0, n);
    // SAFETY: a query of a live stream.
    let pending = unsafe { sys::cuStreamQuery(s.cu_stream()) };
    let text = error_text();
    assert!(text.contains("panic"), "{text}");
    core::mem::forget(ph);
    core::mem::forget(pd);
    assert_eq!(
        pending,
        sys::CUresult::CUDA_SUCCESS,
        "the bridge returned with work still pending on the pair's stream ({pending:?})"
    );
}

/// `cuda::reserve` refuses its own stream while it is captured, but not a capture in global mode
/// on another stream of the thread: its page-locked allocations (`cuMemHostAlloc`, on a fresh
/// context) are then "unsafe" calls during a global capture, which the driver refuses and which
/// invalidate that capture. A global capture also makes the driver refuse every other thread's
/// allocations while it lasts (the other tests of this binary, creating arrays and buffers), so
/// the capture runs in a process of its own: this test starts the binary again on itself, where
/// the pool is fresh and allocates.
#[test]
#[ignore = "needs a GPU"]
fn misuse_gpu_reserve_during_a_global_capture_of_another_stream() {
    let name = concat!(
        module_path!(),
        "::misuse_gpu_reserve_during_a_global_capture_of_another_stream"
    );
    super::alone::alone(name, || {
        use cudarc::driver::sys;
        let s1 = crate::driver::stream(0).expect("a GPU");
        let s2 = crate::driver::stream(0).expect("a GPU");
        crate::driver::prepare(s1.context()).unwrap(); // the module load, outside the capture
        s1.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
            .unwrap();
        let r = crate::ops::reserve::reserve(&s2, 4 << 20);
        let status = s1.capture_status();
        let end = s1.end_capture(sys::CUgraphInstantiate_flags(0));
        assert!(
            r.is_ok() && end.is_ok(),
            "reserve on s2: {r:?}; s1's capture status after it: {status:?}; end_capture: {:?}",
            end.map(|g| g.is_some())
        );
    });
}

/// `cuda::reserve` of 1 or 2 bytes on a fresh context: the pool's page-locked buffers are sized
/// `bytes.next_power_of_two()`, and `rehearse` leases `bytes` but copies `4 · ceil(bytes / 4)`
/// into it (`host_ptr_mut::<f32>(1)` then refuses a 1-byte buffer): an error, not UB.
#[test]
#[ignore = "needs a GPU"]
fn misuse_gpu_reserve_of_one_byte() {
    // A context of its own is not possible here (the primary context is shared); run this first
    // in a fresh process: `--ignored --exact autodiff::raw::tests_misuse::misuse_gpu_reserve_of_one_byte`.
    let s = crate::driver::stream(0).expect("a GPU");
    let r = crate::ops::reserve::reserve(&s, 1);
    assert!(r.is_ok(), "{r:?}");
}

/// Hazard (mechanism, host, Miri): `prepare` reads each handle's stream (`streams`) *before*
/// `resolve` checks that the handle is a primal. A shadow handle can outlive its pair and its
/// stream (`mem::swap` through `split`'s `&mut AdBuf` into a longer-lived pair: the GPU test
/// below does it from safe code), and the safe `<name>_ad` takes it as `&AdBuf` (the `&mut`
/// coerces). Here the handle is built directly (its fields are private; safe code needs a GPU
/// stream for `AdPair::new`): its stream pointer points at a freed `Arc`. Miri reports the
/// dangling reference made in `streams`; natively the call is refused, but only after the read.
#[test]
fn misuse_a_shadow_handle_with_a_dead_stream_is_read_before_its_role_is_checked() {
    let _s = serial();
    let (mut y, x) = ([0.0f32; 4], [1.0f32; 4]);
    // Storage of an `Arc<CudaStream>`, freed: what a dead pair's stream pointer points at.
    let dead =
        Box::into_raw(Box::<core::mem::MaybeUninit<std::sync::Arc<CudaStream>>>::new_uninit());
    // SAFETY: freeing what was just allocated; only the address is kept.
    drop(unsafe { Box::from_raw(dead) });
    let shadow = AdBuf {
        ptr: y.as_mut_ptr(),
        len: y.len(),
        partner: y.as_mut_ptr(),
        stream: dead.cast::<std::sync::Arc<CudaStream>>().cast_const(),
        kind: super::kind_code(MemoryKind::Device),
        role: super::SHADOW,
    };
    let h: *const AdBuf<f32> = &shadow;
    // SAFETY (of the test's call, as the safe `_ad` would make it): a live handle, live slices.
    unsafe {
        bridge_primal(
            "rv",
            |_| Ok(Linear(rv_copy_rule(0, 4))),
            Side::Handle(h, h, MemoryKind::Device),
            Side::Slice(x.as_ptr().cast_mut(), 4, x.as_ptr().cast_mut()),
        )
    };
    let text = error_text();
    assert!(text.contains("got the shadow handle"), "{text}");
}

/// A device copy rule taking its stream as `&CudaStream`, for the GPU test below.
#[rules_macro::derivative_rule(copy, dst = device, src = device, crate = crate, autodiff)]
unsafe fn rv_d2d(
    stream: &cudarc::driver::CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> core::result::Result<(), cudarc::driver::DriverError> {
    // SAFETY: the rule's contract.
    unsafe {
        cudarc::driver::sys::cuMemcpyDtoDAsync_v2(dst as u64, src as u64, n * 4, stream.cu_stream())
            .result()
    }
}

/// Hazard (GPU, safe code only): the shadow handle of a dropped pair, whose stream `Arc` (boxed
/// here, so that it is freed) is gone, passed as the source of `rv_d2d_ad`. The bridge reads the
/// freed `Arc` in `streams` before refusing the handle's role: the error says "two streams"
/// (what it read there: the other stream, or whatever reused the memory) where a bridge that
/// checked the role first says "got the shadow handle".
#[test]
#[ignore = "needs a GPU"]
fn misuse_gpu_a_swapped_shadow_handle_is_read_through_its_dead_stream() {
    let s = crate::driver::stream(0).expect("a GPU");
    let (mut a, mut da) = (
        s.alloc_zeros::<f32>(4).unwrap(),
        s.alloc_zeros::<f32>(4).unwrap(),
    );
    let (mut b, mut db) = (
        s.alloc_zeros::<f32>(4).unwrap(),
        s.alloc_zeros::<f32>(4).unwrap(),
    );
    let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
    {
        let other = Box::new(crate::driver::stream(0).unwrap());
        let mut pb = AdPair::new(&mut b, &mut db, &other).unwrap();
        core::mem::swap(pa.split().1, pb.split().1);
    } // `pb` and the boxed `Arc` are gone; `pa` holds `pb`'s shadow handle
    let junk: Vec<Box<usize>> = (0..64).map(Box::new).collect();
    let (pa_primal, escaped) = pa.split();
    rv_d2d_ad(pa_primal, escaped, 4);
    drop(junk);
    let text = error_text();
    assert!(text.contains("got the shadow handle"), "{text}");
}

/// A panic whose payload panics again when dropped.
struct Bomb;
impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("the panic payload's drop panicked");
    }
}

#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate, autodiff)]
unsafe fn rv_bomb(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    let _ = (dst, src, n);
    std::panic::panic_any(Bomb);
}

/// Hazard (low): `record` catches the panic but drops its payload outside `catch_unwind`; a
/// payload whose `Drop` panics unwinds out of the `extern "C"` primal: the process aborts
/// ("panic in a function that cannot unwind"). Run in a child process, so that the abort is
/// observed rather than suffered.
#[cfg(not(miri))]
#[test]
fn misuse_a_panicking_panic_payload_crosses_the_extern_c_edge() {
    const NAME: &str =
        "autodiff::raw::tests_misuse::misuse_a_panicking_panic_payload_crosses_the_extern_c_edge";
    if std::env::var_os("RULES_RUNTIME_FRESH_POOL_CHILD").is_some() {
        let (mut y, x) = ([0.0f32; 2], [1.0f32; 2]);
        rv_bomb_ad(&mut y, &x, 2);
        let _ = take_error();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env("RULES_RUNTIME_FRESH_POOL_CHILD", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let tail: String = err.lines().rev().take(4).collect::<Vec<_>>().join(" | ");
    assert!(out.status.success(), "child: {:?}: {tail}", out.status);
}

/// (GPU) A bridge on a stream being captured: the rule's copy is recorded into the graph, then
/// `finished` synchronizes the capturing stream, which the driver refuses and which invalidates
/// the capture. Expected by the promises ("bad input: a typed error, nothing changed", as
/// `cuda::reserve` now does): refused before anything is enqueued, the capture intact.
#[test]
#[ignore = "needs a GPU"]
fn misuse_gpu_a_bridge_during_capture_breaks_the_capture() {
    let name = concat!(
        module_path!(),
        "::misuse_gpu_a_bridge_during_capture_breaks_the_capture"
    );
    // A capture of its own process (see `alone`).
    super::alone::alone(name, || {
        use cudarc::driver::sys;
        let s = crate::driver::stream(0).expect("a GPU");
        let (mut a, mut da) = (
            s.alloc_zeros::<f32>(4).unwrap(),
            s.alloc_zeros::<f32>(4).unwrap(),
        );
        let (mut b, mut db) = (
            s.alloc_zeros::<f32>(4).unwrap(),
            s.alloc_zeros::<f32>(4).unwrap(),
        );
        let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
        let mut pb = AdPair::new(&mut b, &mut db, &s).unwrap();
        rv_d2d_ad(pa.split().0, pb.split().0, 4); // outside a capture: works
        assert_eq!(error_text(), "");
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        rv_d2d_ad(pa.split().0, pb.split().0, 4);
        let err = error_text();
        let status = s.capture_status();
        let end = s.end_capture(sys::CUgraphInstantiate_flags(0));
        assert!(
            matches!(end, Ok(Some(_))),
            "bridge: {err:?}; capture status after it: {status:?}; end_capture: {:?}",
            end.map(|g| g.is_some())
        );
    });
}
