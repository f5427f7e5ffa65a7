//! The staged routes between device memory and host-only (pageable) memory at sizes where they
//! run as pipelines of chunks (8 MiB and up): exact sums, the source zeroed or left alone, for
//! several element types, lengths that are and are not whole chunks, and the seed's round trip
//! through the generated rules. `#[ignore]`d: without a GPU they are reported skipped, never
//! passed.

use rules_runtime::CopyRule;
use rules_runtime::cudarc::driver::{CudaStream, DeviceRepr, PinnedHostSlice};
use rules_runtime::{Differentiable, Duplicated, On, accumulate, accumulate_and_zero, zero};
use rules_tests::{add, ramp};
use std::sync::Arc;

/// The tests of this file run one at a time: one of them counts the buffers the context's pool
/// holds, which a staged route running beside it would grow.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn gpu() -> Arc<CudaStream> {
    rules_runtime::cuda::context(0)
        .unwrap_or_else(|e| {
            panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored")
        })
        .default_stream()
}

fn zeroed<T: Differentiable>(v: &[T]) -> bool {
    v.iter()
        .all(|x| x.to_parts().iter().all(|p| p.to_bits() == 0))
}

/// Every staged operation on `n` elements of `T`, against the host's own sums.
fn staged_exact<T: Differentiable + DeviceRepr + Default>(s: &Arc<CudaStream>, n: usize) {
    let on = On::stream(s);
    let a = ramp::<T>(n, 1.0);
    let b = ramp::<T>(n, -3.0);
    let want = add(&a, &b);
    let what = format!("{} n = {n}", T::DTYPE.name());

    // device += pageable, the source kept.
    let mut d = s.clone_htod(&a).unwrap();
    let h = b.clone();
    accumulate(on, &mut d, &h[..]).unwrap();
    assert!(
        s.clone_dtoh(&d).unwrap() == want,
        "device += pageable, {what}"
    );
    assert!(h == b, "the source is read only, {what}");

    // device += pageable; pageable ← 0 (the reverse of a device → pageable copy).
    let mut d = s.clone_htod(&a).unwrap();
    let mut h = b.clone();
    accumulate_and_zero(on, &mut d, &mut h[..]).unwrap();
    assert!(
        s.clone_dtoh(&d).unwrap() == want,
        "device += pageable; 0, {what}"
    );
    assert!(zeroed(&h), "the pageable source is +0.0, {what}");

    // pageable += device; device ← 0 (the reverse of a pageable → device copy).
    let mut h = a.clone();
    let mut d = s.clone_htod(&b).unwrap();
    accumulate_and_zero(on, &mut h[..], &mut d).unwrap();
    assert!(h == want, "pageable += device; 0, {what}");
    assert!(
        zeroed(&s.clone_dtoh(&d).unwrap()),
        "the device source is +0.0, {what}"
    );

    // pageable += device, the source kept.
    let mut h = a.clone();
    let d = s.clone_htod(&b).unwrap();
    accumulate(on, &mut h[..], &d).unwrap();
    assert!(h == want, "pageable += device, {what}");
    assert!(
        s.clone_dtoh(&d).unwrap() == b,
        "the source is read only, {what}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn staged_pipelines_are_exact_for_every_chunking() {
    let _one = serial();
    let s = gpu();
    // 16 MiB chunks: one chunk and a tail, whole chunks, more chunks than slots, and just below
    // the pipeline's threshold.
    for n in [(4 << 20) + 3, 8 << 20, (20 << 20) + 5, (2 << 20) - 1] {
        staged_exact::<f32>(&s, n);
    }
    staged_exact::<f64>(&s, (3 << 20) + 1);
    staged_exact::<half::f16>(&s, (9 << 20) + 7);
    staged_exact::<half::bf16>(&s, (4 << 20) + 1);
}

/// The seed's round trip `y = download(upload(x))`, `loss = Σ y²`, at 6M + 1 elements in
/// pageable memory: `dx == 2x` exactly, and the host shadows are zero after the reverse.
#[test]
#[ignore = "needs a GPU"]
fn seed_round_trip_through_pageable_memory_at_pipeline_sizes() {
    let _one = serial();
    let s = gpu();
    let n = (6 << 20) + 1;
    let x = ramp::<f32>(n, -8.0);
    let mut dx = vec![0.0f32; n];
    let mut d = s.alloc_zeros::<f32>(n).unwrap();
    let mut dd = s.alloc_zeros::<f32>(n).unwrap();
    let mut y = vec![0.0f32; n];
    let mut dy = vec![0.0f32; n];
    let t_up = rules_tests::upload_rule(&s)
        .augmented_primal(
            Duplicated::new(&mut d, &mut dd),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    let t_down = rules_tests::download_rule(&s)
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&d, &mut dd),
        )
        .unwrap();
    assert_eq!(y, x);
    for (g, v) in dy.iter_mut().zip(&y) {
        *g = 2.0 * v;
    }
    rules_tests::download_rule(&s)
        .reverse(
            t_down,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&d, &mut dd),
        )
        .unwrap();
    rules_tests::upload_rule(&s)
        .reverse(
            t_up,
            Duplicated::new(&mut d, &mut dd),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    assert!(dx == want, "dx == 2x");
    assert!(zeroed(&dy), "dy is +0.0 after the reverse");
    assert!(
        zeroed(&s.clone_dtoh(&dd).unwrap()),
        "the device shadow is +0.0"
    );
}

fn pinned_from<T: Differentiable + DeviceRepr + rules_runtime::cudarc::driver::ValidAsZeroBits>(
    s: &Arc<CudaStream>,
    v: &[T],
) -> PinnedHostSlice<T> {
    // SAFETY: written whole before any read.
    let mut p = unsafe { s.context().alloc_pinned::<T>(v.len()) }.unwrap();
    p.as_mut_slice().unwrap().copy_from_slice(v);
    p
}

/// The page-locked routes at pipeline sizes (the host zeroes or adds its side), and below them
/// (one kernel through mapped memory), against the host's own sums.
fn pinned_exact<T>(s: &Arc<CudaStream>, n: usize)
where
    T: Differentiable + DeviceRepr + Default + rules_runtime::cudarc::driver::ValidAsZeroBits,
{
    let on = On::stream(s);
    let a = ramp::<T>(n, 1.0);
    let b = ramp::<T>(n, -3.0);
    let want = add(&a, &b);
    let what = format!("{} n = {n}", T::DTYPE.name());

    // device += pinned; pinned ← 0 (the reverse of a device → pinned copy).
    let mut d = s.clone_htod(&a).unwrap();
    let mut p = pinned_from(s, &b);
    accumulate_and_zero(on, &mut d, &mut p).unwrap();
    s.synchronize().unwrap(); // the host reads below: cudarc's events may be off
    assert!(
        s.clone_dtoh(&d).unwrap() == want,
        "device += pinned; 0, {what}"
    );
    assert!(
        zeroed(p.as_slice().unwrap()),
        "the pinned source is +0.0, {what}"
    );

    // pinned += device; device ← 0 (the reverse of a pinned → device copy).
    let mut p = pinned_from(s, &a);
    let mut d = s.clone_htod(&b).unwrap();
    accumulate_and_zero(on, &mut p, &mut d).unwrap();
    s.synchronize().unwrap(); // the host reads below: cudarc's events may be off
    assert!(
        p.as_slice().unwrap() == &want[..],
        "pinned += device; 0, {what}"
    );
    assert!(
        zeroed(&s.clone_dtoh(&d).unwrap()),
        "the device source is +0.0, {what}"
    );

    // pinned += device, the source kept.
    let mut p = pinned_from(s, &a);
    let d = s.clone_htod(&b).unwrap();
    accumulate(on, &mut p, &d).unwrap();
    s.synchronize().unwrap(); // the host reads below: cudarc's events may be off
    assert!(
        p.as_slice().unwrap() == &want[..],
        "pinned += device, {what}"
    );
    assert!(
        s.clone_dtoh(&d).unwrap() == b,
        "the source is read only, {what}"
    );

    // pinned += pinned; pinned ← 0.
    let mut p = pinned_from(s, &a);
    let mut q = pinned_from(s, &b);
    accumulate_and_zero(on, &mut p, &mut q).unwrap();
    s.synchronize().unwrap(); // the host reads below: cudarc's events may be off
    assert!(
        p.as_slice().unwrap() == &want[..],
        "pinned += pinned; 0, {what}"
    );
    assert!(
        zeroed(q.as_slice().unwrap()),
        "the pinned source is +0.0, {what}"
    );

    // unified += pinned; pinned ← 0.
    // SAFETY: written whole before any read.
    let mut u = unsafe { s.context().alloc_unified::<T>(n, true) }.unwrap();
    u.as_mut_slice().unwrap().copy_from_slice(&a);
    let mut p = pinned_from(s, &b);
    accumulate_and_zero(on, &mut u, &mut p).unwrap();
    s.synchronize().unwrap(); // the host reads below: cudarc's events may be off
    assert!(
        u.as_slice().unwrap() == &want[..],
        "unified += pinned; 0, {what}"
    );
    assert!(
        zeroed(p.as_slice().unwrap()),
        "the pinned source is +0.0, {what}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn pinned_routes_are_exact_above_and_below_the_pipeline_threshold() {
    let _one = serial();
    let s = gpu();
    // Around the 8 MiB threshold, a head of exactly one 16 MiB chunk before the 4 MiB tail,
    // ragged heads, and sizes below the threshold.
    for n in [
        (2 << 20) + 1,
        5 << 20,
        (4 << 20) + 3,
        16 << 20,
        (20 << 20) + 5,
        (2 << 20) - 1,
        1000,
    ] {
        pinned_exact::<f32>(&s, n);
    }
    pinned_exact::<f64>(&s, (5 << 20) + 1);
    pinned_exact::<half::bf16>(&s, (9 << 20) + 7);
}

/// Work queued before the call that writes a pinned shadow is waited for before the host zeroes
/// or adds it: a device → pinned copy enqueued just before the reverse.
#[test]
#[ignore = "needs a GPU"]
fn pinned_host_share_waits_for_work_queued_before_it() {
    let _one = serial();
    let s = gpu();
    let on = On::stream(&s);
    let n = 12 << 20;
    let a = ramp::<f32>(n, 2.0);
    let b = ramp::<f32>(n, -1.0);
    let src = s.clone_htod(&b).unwrap();
    let mut d = s.clone_htod(&a).unwrap();
    let mut p = pinned_from(&s, &vec![0.0f32; n]);
    s.memcpy_dtoh(&src, &mut p).unwrap(); // not finished when the next call starts
    accumulate_and_zero(on, &mut d, &mut p).unwrap();
    assert!(
        s.clone_dtoh(&d).unwrap() == add(&a, &b),
        "device += the copied values"
    );
    assert!(zeroed(p.as_slice().unwrap()));
}

/// A large pinned reverse inside a graph capture keeps the one-kernel device route (the host
/// cannot take its share in a graph) and replays exactly.
#[test]
#[ignore = "needs a GPU"]
fn a_large_pinned_reverse_is_captured_as_device_work() {
    let _one = serial();
    let ctx = rules_runtime::cuda::context(0).unwrap();
    // SAFETY: everything here runs on this one stream.
    unsafe { ctx.disable_event_tracking() };
    let s = ctx.new_stream().unwrap();
    let on = On::stream(&s);
    let n = 4 << 20;
    let a = ramp::<f32>(n, 0.5);
    let mut d = s.alloc_zeros::<f32>(n).unwrap();
    let mut p = pinned_from(&s, &a);
    accumulate_and_zero(on, &mut d, &mut p).unwrap(); // kernels loaded, d = a, p = 0
    s.synchronize().unwrap();
    // Thread-local: the capture restricts this thread only.
    let mode = rules_runtime::cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    s.begin_capture(mode).unwrap();
    accumulate_and_zero(on, &mut d, &mut p).unwrap();
    let graph = s
        .end_capture(rules_runtime::cudarc::driver::sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a graph");
    for round in 1..=3 {
        p.as_mut_slice().unwrap().copy_from_slice(&a);
        graph.launch().unwrap();
        s.synchronize().unwrap();
        let want: Vec<f32> = a.iter().map(|v| v * (round + 1) as f32).collect();
        assert!(s.clone_dtoh(&d).unwrap() == want, "replay {round}");
        assert!(zeroed(p.as_slice().unwrap()), "replay {round}");
    }
}

/// The split reverse in device memory at sizes where its zeroing is the streaming-store kernel
/// (128 MiB per operand and up), also on views that start mid-vector and end mid-vector.
#[test]
#[ignore = "needs a GPU"]
fn large_device_reverse_zeroes_with_streaming_stores_exactly() {
    let _one = serial();
    let s = gpu();
    let on = On::stream(&s);
    let n = (32 << 20) + 11;
    let a = ramp::<f32>(n, 1.0);
    let b = ramp::<f32>(n, -2.0);
    let mut d = s.clone_htod(&a).unwrap();
    let mut e = s.clone_htod(&b).unwrap();
    accumulate_and_zero(on, &mut d, &mut e).unwrap();
    assert!(s.clone_dtoh(&d).unwrap() == add(&a, &b), "whole buffers");
    assert!(zeroed(&s.clone_dtoh(&e).unwrap()), "whole source zeroed");

    // Views one element in and two short of the end, both sides: a head and a tail around the
    // vectors; the elements outside the views stay as they were.
    let mut d = s.clone_htod(&a).unwrap();
    let mut e = s.clone_htod(&b).unwrap();
    {
        let mut dv = d.slice_mut(1..n - 2);
        let mut ev = e.slice_mut(1..n - 2);
        accumulate_and_zero(on, &mut dv, &mut ev).unwrap();
    }
    let (d, e) = (s.clone_dtoh(&d).unwrap(), s.clone_dtoh(&e).unwrap());
    let sum = add(&a, &b);
    assert!(d[1..n - 2] == sum[1..n - 2] && d[0] == a[0] && d[n - 2..] == a[n - 2..]);
    assert!(zeroed(&e[1..n - 2]), "the view is zeroed");
    assert!(
        e[0] == b[0] && e[n - 2..] == b[n - 2..],
        "nothing outside the view"
    );
}

/// `zero` of a large device buffer (128 MiB and up: the streaming-store kernel instead of the
/// driver's memset), whole and through a view that starts and ends mid-vector, for a 4-byte and a
/// 2-byte element; the elements outside the view stay as they were.
#[test]
#[ignore = "needs a GPU"]
fn large_device_zero_is_exact_on_whole_buffers_and_odd_views() {
    let _one = serial();
    let s = gpu();
    let on = On::stream(&s);
    let n = (32 << 20) + 11;
    let a = ramp::<f32>(n, 1.0);
    let mut d = s.clone_htod(&a).unwrap();
    zero(on, &mut d).unwrap();
    assert!(zeroed(&s.clone_dtoh(&d).unwrap()), "whole f32 buffer");
    let mut d = s.clone_htod(&a).unwrap();
    zero(on, &mut d.slice_mut(3..n - 2)).unwrap();
    let d = s.clone_dtoh(&d).unwrap();
    assert!(zeroed(&d[3..n - 2]), "the f32 view is zeroed");
    assert!(
        d[..3] == a[..3] && d[n - 2..] == a[n - 2..],
        "nothing outside the f32 view"
    );

    let n = (64 << 20) + 5;
    let h: Vec<half::f16> = (0..n)
        .map(|i| half::f16::from_f32((i % 251) as f32 + 1.0))
        .collect();
    let mut d = s.clone_htod(&h).unwrap();
    zero(on, &mut d.slice_mut(1..n - 1)).unwrap();
    let d = s.clone_dtoh(&d).unwrap();
    assert!(zeroed(&d[1..n - 1]), "the f16 view is zeroed");
    assert!(
        d[0] == h[0] && d[n - 1] == h[n - 1],
        "nothing outside the f16 view"
    );
}

/// `cuda::reserve` pools the staging that reverses through pageable memory lease: after
/// it, such reverses, small and pipelined, both ways, allocate nothing more, and their sums are
/// exact.
#[test]
#[ignore = "needs a GPU"]
fn after_reserve_staged_reverses_allocate_no_staging() {
    let _one = serial();
    let s = gpu();
    let on = On::stream(&s);
    let big = 4 << 20; // 16 MiB of f32: the pipelines' route
    let r = rules_runtime::cuda::reserve(&s, big * 4).unwrap();
    assert!(r.pipeline_pinned_bytes >= 48 << 20, "{r:?}");
    assert!(r.small_pinned_bytes >= 2 * (8 << 20), "{r:?}");
    assert!(r.host_threads >= 1, "{r:?}");
    // (contexts, buffers, bytes): the buffers and their bytes must not grow.
    let (_, buffers, bytes) = rules_runtime::testing::cache_held(s.context());
    for n in [3, 1000, big] {
        let (a, b) = (ramp::<f32>(n, 1.0), ramp::<f32>(n, -3.0));
        let mut host = a.clone();
        let mut dev = s.clone_htod(&b).unwrap();
        // Device += host (staged in), host zeroed; then host += device (staged out), device
        // zeroed.
        accumulate_and_zero(on, &mut dev, &mut host[..]).unwrap();
        assert!(zeroed(&host), "n = {n}: the host source is zeroed");
        accumulate_and_zero(on, &mut host[..], &mut dev).unwrap();
        s.synchronize().unwrap();
        assert_eq!(host, add(&a, &b), "n = {n}");
        assert!(zeroed(&s.clone_dtoh(&dev).unwrap()), "n = {n}");
    }
    let (_, after, after_bytes) = rules_runtime::testing::cache_held(s.context());
    assert_eq!(
        (after, after_bytes),
        (buffers, bytes),
        "no staging buffer was allocated after the reserve"
    );
}
