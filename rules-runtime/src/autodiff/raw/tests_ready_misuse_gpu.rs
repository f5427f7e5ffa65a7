//! The ready-made copies on the GPU against what safe code can make them do (see
//! `tests_ready_misuse.rs`): `--ignored gpu_ready_misuse_`.
use super::ready::for_f32 as b;
use super::tapes::aug_ok;
use crate::Error;
use crate::autodiff::{AdBuf, AdError, AdPair, copies};

use super::tests_ready_misuse::{error, error_text};

/// A GPU's stream. These tests are `#[ignore]`d: run with `--ignored gpu_ready_misuse_`, a
/// missing GPU is a failure, not a pass.
fn gpu() -> std::sync::Arc<cudarc::driver::CudaStream> {
    crate::cuda::stream(0).expect("a GPU (this test was asked for with --ignored)")
}

/// Held: the handles of pairs made for two streams are refused in one call (primal and
/// augmented primal), before anything is enqueued: nothing changes.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_handles_of_two_streams_are_refused() {
    let (s1, s2) = (gpu(), gpu());
    let mut a = s1.clone_htod(&[1.0f32; 4]).unwrap();
    let mut da = s1.clone_htod(&[2.0f32; 4]).unwrap();
    let mut c = s2.clone_htod(&[3.0f32; 4]).unwrap();
    let mut dc = s2.clone_htod(&[4.0f32; 4]).unwrap();
    {
        let mut pa = AdPair::new(&mut a, &mut da, &s1).unwrap();
        let mut pc = AdPair::new(&mut c, &mut dc, &s2).unwrap();
        let (x, dx) = pa.split();
        let dx: *const AdBuf<f32> = dx;
        let (y, dy) = pc.split();
        let dy: *const AdBuf<f32> = dy;
        copies::memcpy(x, y);
        assert!(error_text().contains("two streams"));
        copies::memcpy_2d(x, 8, y, 8, (2, 2));
        assert!(error_text().contains("two streams"));
        // SAFETY: live handles of two pairs.
        unsafe { b::memcpy_aug(x, dx, y, dy) };
        assert!(!aug_ok());
        assert!(error_text().contains("two streams"));
    }
    s1.synchronize().unwrap();
    assert_eq!(s1.clone_dtoh(&a).unwrap(), [1.0; 4]);
    assert_eq!(s1.clone_dtoh(&da).unwrap(), [2.0; 4]);
    assert_eq!(s2.clone_dtoh(&c).unwrap(), [3.0; 4]);
    assert_eq!(s2.clone_dtoh(&dc).unwrap(), [4.0; 4]);
}

/// Held: a pageable pair without a stream (`new_host`) mixed with a device pair runs on the
/// device pair's stream, both ways, with the reverse's derivatives right.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_a_host_pair_mixed_with_a_device_pair() {
    let s = gpu();
    let (mut h, mut dh) = (vec![1.0f32, 2.0, 3.0], vec![0.0f32; 3]);
    let mut d = s.alloc_zeros::<f32>(3).unwrap();
    let mut dd = s.clone_htod(&[0.5f32; 3]).unwrap();
    {
        let mut ph = AdPair::new_host(&mut h[..], &mut dh[..]).unwrap();
        let mut pd = AdPair::new(&mut d, &mut dd, &s).unwrap();
        let (x, dx) = ph.split();
        let dx: *const AdBuf<f32> = dx;
        let (y, dy) = pd.split();
        let dy: *const AdBuf<f32> = dy;
        // y ← x (host to device), then its reverse: dx += dy, dy ← 0.
        // SAFETY: live handles of two pairs.
        unsafe { b::memcpy_aug(y, dy, x, dx) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::memcpy_rev(y, dy, x, dx) };
        assert_eq!(error_text(), "");
        // And back, the safe call: x ← y.
        copies::memcpy(x, y);
        assert_eq!(error_text(), "");
    }
    assert_eq!(s.clone_dtoh(&d).unwrap(), [1.0, 2.0, 3.0]);
    assert_eq!(s.clone_dtoh(&dd).unwrap(), [0.0; 3]);
    assert_eq!((h, dh), (vec![1.0, 2.0, 3.0], vec![0.5; 3]));
}

/// Held: a memset of pageable memory given a stream (`AdPair::new` with a `Vec`) is refused, as
/// cudarc's `memset_zeros` takes device memory; nothing changes.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_memset_of_pageable_memory_with_a_stream_is_refused() {
    let s = gpu();
    let (mut a, mut da) = (vec![3.0f32; 4], vec![1.0f32; 4]);
    {
        let mut p = AdPair::new(&mut a, &mut da, &s).unwrap();
        let (x, dx) = p.split();
        copies::memset_zeros(x);
        assert!(error_text().contains("memset_zeros sets device or unified memory"));
        // SAFETY: live handles of one pair.
        unsafe { b::zeros_aug(x, dx) };
        assert!(!aug_ok());
        assert!(error_text().contains("memset_zeros sets device or unified memory"));
    }
    assert_eq!((a, da), (vec![3.0; 4], vec![1.0; 4]));
}

/// Held: bad input on device memory (unequal lengths, a shadow in a primal's place, a box past
/// the buffer, a pitch shorter than a row) is refused before the driver is called.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_bad_device_input_changes_nothing() {
    let s = gpu();
    let mut a = s.clone_htod(&[1.0f32; 4]).unwrap();
    let mut da = s.clone_htod(&[2.0f32; 4]).unwrap();
    let mut c = s.clone_htod(&[3.0f32; 3]).unwrap();
    let mut dc = s.clone_htod(&[4.0f32; 3]).unwrap();
    {
        let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
        let mut pc = AdPair::new(&mut c, &mut dc, &s).unwrap();
        let (x, dx) = pa.split();
        let (y, _) = pc.split();
        copies::memcpy(x, y);
        assert!(matches!(
            error(),
            AdError::Rule(Error::LengthMismatch { .. })
        ));
        copies::memcpy_htod(x, &[5.0; 3]);
        assert!(matches!(
            error(),
            AdError::Rule(Error::LengthMismatch { .. })
        ));
        copies::memcpy(x, dx);
        let e = error_text();
        assert!(e.contains("shadow handle"), "{e}");
        copies::memset_zeros(dx);
        let e = error_text();
        assert!(e.contains("shadow handle"), "{e}");
        copies::memcpy_2d(x, 8, y, 8, (2, 2));
        assert!(matches!(error(), AdError::Rule(Error::BadRegion { .. })));
        copies::memcpy_2d(x, 4, y, 4, (2, 2));
        assert!(matches!(error(), AdError::Rule(Error::BadRegion { .. })));
    }
    assert_eq!(s.clone_dtoh(&a).unwrap(), [1.0; 4]);
    assert_eq!(s.clone_dtoh(&da).unwrap(), [2.0; 4]);
    assert_eq!(s.clone_dtoh(&c).unwrap(), [3.0; 3]);
    assert_eq!(s.clone_dtoh(&dc).unwrap(), [4.0; 3]);
}

/// Held (the promise "host memory finished with when the call returns"): a large device →
/// pinned copy is complete when the safe call returns, even with the pair forgotten (no guard
/// records the copy on the pinned buffer's event, so `as_slice` would not wait for it).
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_pinned_memory_is_written_when_the_call_returns() {
    let s = gpu();
    let ctx = s.context();
    let n = 1 << 24;
    let mut d = s.clone_htod(&vec![1.0f32; n]).unwrap();
    let mut dd = s.alloc_zeros::<f32>(n).unwrap();
    // SAFETY: f32 is valid for any bits; filled below.
    let mut p = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    let mut dp = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    p.as_mut_slice().unwrap().fill(0.0);
    dp.as_mut_slice().unwrap().fill(0.0);
    {
        let mut pd = AdPair::new(&mut d, &mut dd, &s).unwrap();
        let mut pp = AdPair::new(&mut p, &mut dp, &s).unwrap();
        let (x, _) = pd.split();
        let (y, _) = pp.split();
        copies::memcpy(y, x);
        assert_eq!(error_text(), "");
        core::mem::forget(pp);
        core::mem::forget(pd);
    }
    let host = p.as_slice().unwrap();
    assert!(host.iter().all(|v| *v == 1.0), "the copy had not finished");
}

/// Held: a 3D box device → pinned on the driver's path reaches its rows only: the padding
/// between rows and slices, and its derivative, keep their values (`cuMemcpy3DAsync` with the
/// rows-per-slice of each side).
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_3d_box_leaves_row_and_slice_padding_on_the_device() {
    let s = gpu();
    let ctx = s.context();
    let xs: Vec<f32> = (0..18).map(|v| v as f32).collect();
    let mut x = s.clone_htod(&xs).unwrap();
    let mut dx = s.alloc_zeros::<f32>(18).unwrap();
    // SAFETY: f32 is valid for any bits; filled below.
    let mut y = unsafe { ctx.alloc_pinned::<f32>(32) }.unwrap();
    let mut dy = unsafe { ctx.alloc_pinned::<f32>(32) }.unwrap();
    y.as_mut_slice().unwrap().fill(-1.0);
    dy.as_mut_slice().unwrap().fill(5.0);
    {
        let mut px = AdPair::new(&mut x, &mut dx, &s).unwrap();
        let mut py = AdPair::new(&mut y, &mut dy, &s).unwrap();
        let (xh, dxh) = px.split();
        let dxh: *const AdBuf<f32> = dxh;
        let (yh, dyh) = py.split();
        let dyh: *const AdBuf<f32> = dyh;
        // SAFETY: live handles of two pairs on one stream.
        unsafe {
            b::box3_aug(
                yh, dyh, 16, 16, 4, 4, xh, dxh, 12, 12, 3, 3, 2, 2, 3, 3, 2, 2,
            )
        };
        assert!(aug_ok(), "{}", error_text());
        unsafe {
            b::box3_rev(
                yh, dyh, 16, 16, 4, 4, xh, dxh, 12, 12, 3, 3, 2, 2, 3, 3, 2, 2,
            )
        };
        assert_eq!(error_text(), "");
    }
    let (yv, dyv) = (y.as_slice().unwrap(), dy.as_slice().unwrap());
    let dxv = s.clone_dtoh(&dx).unwrap();
    for z in 0..2 {
        for r in 0..4 {
            for col in 0..4 {
                let i = z * 16 + r * 4 + col;
                let inside = r < 3 && col < 2;
                let want = if inside {
                    (z * 9 + r * 3 + col) as f32
                } else {
                    -1.0
                };
                assert_eq!(yv[i], want, "y[{z}][{r}][{col}]");
                assert_eq!(
                    dyv[i],
                    if inside { 0.0 } else { 5.0 },
                    "dy[{z}][{r}][{col}]"
                );
            }
        }
        for r in 0..3 {
            for col in 0..3 {
                let want = if col < 2 { 5.0 } else { 0.0 };
                assert_eq!(dxv[z * 9 + r * 3 + col], want, "dx[{z}][{r}][{col}]");
            }
        }
    }
}

/// Held: empty boxes (width, height or depth 0) on the driver's path copy nothing and are not
/// errors, as on the host; a one-row box whose pitches are not checked (they are never
/// stepped) copies its row.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_empty_and_one_row_boxes_on_the_device() {
    let s = gpu();
    let mut a = s.clone_htod(&[1.0f32; 6]).unwrap();
    let mut da = s.clone_htod(&[2.0f32; 6]).unwrap();
    let mut c = s.clone_htod(&[3.0f32; 6]).unwrap();
    let mut dc = s.clone_htod(&[4.0f32; 6]).unwrap();
    {
        let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
        let mut pc = AdPair::new(&mut c, &mut dc, &s).unwrap();
        let (x, _) = pa.split();
        let (y, _) = pc.split();
        let mut refused = Vec::new();
        for (dl, sl, shape) in [
            ((8, 3), (8, 3), (0, 3, 1)),
            ((8, 3), (8, 3), (2, 0, 1)),
            ((8, 3), (8, 3), (2, 3, 0)),
            ((0, 0), (0, 0), (0, 6, 1)),
            ((0, 0), (0, 0), (0, usize::MAX, 1)),
        ] {
            copies::memcpy_3d(x, dl, y, sl, shape);
            let e = error_text();
            if !e.is_empty() {
                refused.push(format!("{dl:?} {sl:?} {shape:?}: {e}"));
            }
        }
        assert!(
            refused.is_empty(),
            "empty boxes refused:\n{}",
            refused.join("\n")
        );
        // One row, pitches 0 (never stepped on the host): its 3 elements, or, where the
        // driver asks for a pitch that holds the row, a typed error that wrote nothing.
        copies::memcpy_2d(x, 0, y, 0, (3, 1));
        let e = error_text();
        drop(pa);
        let want = if e.is_empty() {
            [3.0, 3.0, 3.0, 1.0, 1.0, 1.0]
        } else {
            assert!(e.starts_with("1: memcpy_3d (primal)"), "{e}");
            [1.0; 6]
        };
        assert_eq!(s.clone_dtoh(&a).unwrap(), want, "{e}");
    }
    assert_eq!(s.clone_dtoh(&da).unwrap(), [2.0; 6]);
    assert_eq!(s.clone_dtoh(&c).unwrap(), [3.0; 6]);
}

/// Held: a ready-made copy on a capturing stream is refused before anything is enqueued (it
/// would wait for the stream, which a capture refuses): the capture stays valid and ends.
#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_misuse_a_copy_during_capture_is_refused_and_the_capture_ends() {
    let name = concat!(
        module_path!(),
        "::gpu_ready_misuse_a_copy_during_capture_is_refused_and_the_capture_ends"
    );
    // A capture of its own process (see `alone`).
    super::alone::alone(name, || {
        use cudarc::driver::sys;
        let s = gpu();
        let mut a = s.clone_htod(&[1.0f32; 4]).unwrap();
        let mut da = s.alloc_zeros::<f32>(4).unwrap();
        let mut c = s.clone_htod(&[3.0f32; 4]).unwrap();
        let mut dc = s.alloc_zeros::<f32>(4).unwrap();
        {
            let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
            let mut pc = AdPair::new(&mut c, &mut dc, &s).unwrap();
            let (x, _) = pa.split();
            let (y, _) = pc.split();
            s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .unwrap();
            copies::memcpy(x, y);
            let e1 = error_text();
            copies::memset_zeros(x);
            let e2 = error_text();
            copies::memcpy_2d(x, 8, y, 8, (2, 2));
            let e3 = error_text();
            let end = s.end_capture(sys::CUgraphInstantiate_flags(0));
            assert!(end.is_ok(), "end_capture: {:?}", end.err());
            for e in [e1, e2, e3] {
                assert!(e.contains("captur"), "{e}");
            }
        }
        assert_eq!(s.clone_dtoh(&a).unwrap(), [1.0; 4]);
    });
}
