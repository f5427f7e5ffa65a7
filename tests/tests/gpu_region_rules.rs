//! GPU suite for the region rules: the seed's round trip through pitched 2D copies (rows with
//! padding) in every memory kind, forward and reverse; a fill with an active value inside
//! `loss = Σ w ⊙ fill(v)` against an f64 reference, bit-identical over ten runs; a fill from a
//! value held in a one-element device buffer; memsets zeroing shadows; `restore` bringing the
//! old bytes back.
//!
//! Every test is `#[ignore]`d so that a machine without a GPU reports it as skipped, never as
//! passed. On a GPU machine: `cargo test -p rules-tests --test gpu_region_rules -- --include-ignored`.

use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DriverError, PinnedHostSlice, UnifiedSlice,
};
use rules_runtime::{Active, Dual, Duplicated, derivative_rule};
use rules_runtime::{FillRule, MemsetRule, RegionRule};
use std::sync::Arc;

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

/// The rows of a box: `(dst start, src start)` of each row, in elements.
fn rows(dpitch: usize, spitch: usize, height: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..height).map(move |r| (r * dpitch / 4, r * spitch / 4))
}

// ---- Pitched copies, as a user writes them --------------------------------------------------

/// Pageable rows → device rows, row by row on the stream.
#[derivative_rule(copy2d)]
fn upload2d(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    for (d, s) in rows(dpitch, spitch, height) {
        stream.memcpy_htod(&src[s..s + width], &mut dst.slice_mut(d..d + width))?;
    }
    Ok(())
}

/// Device rows → pageable rows.
#[derivative_rule(copy2d)]
fn download2d(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &CudaSlice<f32>,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    for (d, s) in rows(dpitch, spitch, height) {
        stream.memcpy_dtoh(&src.slice(s..s + width), &mut dst[d..d + width])?;
    }
    Ok(())
}

/// Rule pairs into and out of a host-accessible kind (pinned, unified), by host code once the
/// stream's pending work is done.
macro_rules! host_kind_rules {
    ($up:ident, $down:ident, $ty:ty) => {
        /// Pageable rows → rows of this kind.
        #[derivative_rule(copy2d)]
        fn $up(
            stream: &Arc<CudaStream>,
            #[dst] dst: &mut $ty,
            #[src] src: &[f32],
            #[dst_pitch] dpitch: usize,
            #[src_pitch] spitch: usize,
            #[width] width: usize,
            #[height] height: usize,
        ) -> Result<(), DriverError> {
            stream.synchronize()?;
            let dst = dst.as_mut_slice()?;
            for (d, s) in rows(dpitch, spitch, height) {
                dst[d..d + width].copy_from_slice(&src[s..s + width]);
            }
            Ok(())
        }

        /// Rows of this kind → pageable rows.
        #[derivative_rule(copy2d)]
        fn $down(
            stream: &Arc<CudaStream>,
            #[dst] dst: &mut [f32],
            #[src] src: &$ty,
            #[dst_pitch] dpitch: usize,
            #[src_pitch] spitch: usize,
            #[width] width: usize,
            #[height] height: usize,
        ) -> Result<(), DriverError> {
            stream.synchronize()?;
            let src = src.as_slice()?;
            for (d, s) in rows(dpitch, spitch, height) {
                dst[d..d + width].copy_from_slice(&src[s..s + width]);
            }
            Ok(())
        }
    };
}
host_kind_rules!(upload2d_pinned, download2d_pinned, PinnedHostSlice<f32>);
host_kind_rules!(upload2d_unified, download2d_unified, UnifiedSlice<f32>);

fn host_rows_copy(dst: &mut [f32], src: &[f32], dpitch: usize, spitch: usize, w: usize, h: usize) {
    for (d, s) in rows(dpitch, spitch, h) {
        dst[d..d + w].copy_from_slice(&src[s..s + w]);
    }
}

/// Pageable rows → a pageable `Vec`, on the stream (the shadow work stays on the host).
#[derivative_rule(copy2d)]
#[allow(clippy::ptr_arg)]
fn upload2d_pageable(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut Vec<f32>,
    #[src] src: &[f32],
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let _ = stream;
    host_rows_copy(dst, src, dpitch, spitch, width, height);
}

/// A pageable `Vec` → pageable rows.
#[derivative_rule(copy2d)]
#[allow(clippy::ptr_arg)]
fn download2d_pageable(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &Vec<f32>,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let _ = stream;
    host_rows_copy(dst, src, dpitch, spitch, width, height);
}

/// The box of the round trip: 5 rows of 33 elements; the host rows 40 elements apart, the middle
/// rows 48 (padding in every buffer, its sentinels never touched).
const W: usize = 33;
const H: usize = 5;
const HOST_ROW: usize = 40;
const MID_ROW: usize = 48;
const SENTINEL: f32 = -7.5;

fn in_box(i: usize, row: usize) -> bool {
    i % row < W && i / row < H
}

fn host_rows() -> Vec<f32> {
    (0..HOST_ROW * H)
        .map(|i| {
            if in_box(i, HOST_ROW) {
                (i % 97) as f32 / 8.0 - 5.0
            } else {
                SENTINEL
            }
        })
        .collect()
}

fn padded(row: usize, inside: f32) -> Vec<f32> {
    (0..row * H)
        .map(|i| if in_box(i, row) { inside } else { SENTINEL })
        .collect()
}

/// The seed's round trip `loss = Σ (download(upload(x)))²` through one memory kind: reverse
/// gives `dx == 2x` exactly in the box; forward carries `dx` into `dy` exactly in the box; no
/// padding element of any buffer or shadow is touched.
macro_rules! round_trip {
    ($name:ident, $mid:expr, $u:ident, $d:ident) => {
        #[test]
        #[ignore = "needs a GPU"]
        fn $name() {
            let s = gpu();
            let (hp, mp) = (HOST_ROW * 4, MID_ROW * 4);
            let x = host_rows();
            let mk = |inside: f32| $mid(&s, &padded(MID_ROW, inside));
            // Reverse: dx == 2x.
            let (mut mid, mut dmid) = (mk(0.0), mk(0.0));
            let (mut y, mut dy) = (padded(HOST_ROW, 0.0), padded(HOST_ROW, 0.0));
            let mut dx = padded(HOST_ROW, 0.0);
            let t_up = $u(&s, mp, hp, W, H)
                .augmented_primal(
                    Duplicated::new(&mut mid, &mut dmid),
                    Duplicated::new(&x[..], &mut dx[..]),
                )
                .unwrap();
            let t_down = $d(&s, hp, mp, W, H)
                .augmented_primal(
                    Duplicated::new(&mut y[..], &mut dy[..]),
                    Duplicated::new(&mid, &mut dmid),
                )
                .unwrap();
            s.synchronize().unwrap();
            assert_eq!(y, x, "the primal round trip");
            for i in 0..y.len() {
                if in_box(i, HOST_ROW) {
                    dy[i] = 2.0 * y[i];
                }
            }
            $d(&s, hp, mp, W, H)
                .reverse(
                    t_down,
                    Duplicated::new(&mut y[..], &mut dy[..]),
                    Duplicated::new(&mid, &mut dmid),
                )
                .unwrap();
            $u(&s, mp, hp, W, H)
                .reverse(
                    t_up,
                    Duplicated::new(&mut mid, &mut dmid),
                    Duplicated::new(&x[..], &mut dx[..]),
                )
                .unwrap();
            s.synchronize().unwrap();
            for i in 0..x.len() {
                let b = in_box(i, HOST_ROW);
                let want = if b { 2.0 * x[i] } else { SENTINEL };
                assert_eq!(dx[i].to_bits(), want.to_bits(), "dx[{i}]");
                assert_eq!(dy[i], if b { 0.0 } else { SENTINEL }, "dy[{i}]");
            }
            // Forward: the tangent dx = 2x arrives in dy exactly, padding untouched.
            let (mut mid, mut dmid) = (mk(0.0), mk(0.0));
            let (mut y, mut dy) = (padded(HOST_ROW, 0.0), padded(HOST_ROW, 0.0));
            let mut dx: Vec<f32> = x
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    if in_box(i, HOST_ROW) {
                        2.0 * v
                    } else {
                        SENTINEL
                    }
                })
                .collect();
            $u(&s, mp, hp, W, H)
                .forward(
                    Duplicated::new(&mut mid, &mut dmid),
                    Duplicated::new(&x[..], &mut dx[..]),
                )
                .unwrap();
            $d(&s, hp, mp, W, H)
                .forward(
                    Duplicated::new(&mut y[..], &mut dy[..]),
                    Duplicated::new(&mid, &mut dmid),
                )
                .unwrap();
            s.synchronize().unwrap();
            assert_eq!(y, x);
            for i in 0..x.len() {
                let want = if in_box(i, HOST_ROW) {
                    2.0 * x[i]
                } else {
                    SENTINEL
                };
                assert_eq!(dy[i].to_bits(), want.to_bits(), "dy[{i}]");
            }
        }
    };
}

fn device_mid(s: &Arc<CudaStream>, v: &[f32]) -> CudaSlice<f32> {
    s.clone_htod(v).unwrap()
}

fn pinned_mid(s: &Arc<CudaStream>, v: &[f32]) -> PinnedHostSlice<f32> {
    let mut p = unsafe { s.context().alloc_pinned::<f32>(v.len()) }.unwrap();
    p.as_mut_slice().unwrap().copy_from_slice(v);
    p
}

fn unified_mid(s: &Arc<CudaStream>, v: &[f32]) -> UnifiedSlice<f32> {
    let mut u = unsafe { s.context().alloc_unified::<f32>(v.len(), true) }.unwrap();
    u.as_mut_slice().unwrap().copy_from_slice(v);
    u
}

fn pageable_mid(_: &Arc<CudaStream>, v: &[f32]) -> Vec<f32> {
    v.to_vec()
}

round_trip!(
    pitched_round_trip_device,
    device_mid,
    upload2d_rule,
    download2d_rule
);
round_trip!(
    pitched_round_trip_pinned,
    pinned_mid,
    upload2d_pinned_rule,
    download2d_pinned_rule
);
round_trip!(
    pitched_round_trip_unified,
    unified_mid,
    upload2d_unified_rule,
    download2d_unified_rule
);
round_trip!(
    pitched_round_trip_pageable,
    pageable_mid,
    upload2d_pageable_rule,
    download2d_pageable_rule
);

// ---- Fills and memsets ----------------------------------------------------------------------

/// Fills device rows with `v` (staged through the host: the primal's speed is not under test).
#[derivative_rule(fill)]
fn fill2d(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: f32,
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    let row = vec![v; width];
    for (d, _) in rows(pitch, pitch, height) {
        stream.memcpy_htod(&row, &mut dst.slice_mut(d..d + width))?;
    }
    Ok(())
}

/// Fills device rows from a value held in a one-element device buffer (a copy per element: the
/// primal's speed is not under test).
#[derivative_rule(fill)]
fn fill2d_from(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: &CudaSlice<f32>,
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    for (d, _) in rows(pitch, pitch, height) {
        for e in d..d + width {
            stream.memcpy_dtod(v, &mut dst.slice_mut(e..e + 1))?;
        }
    }
    Ok(())
}

/// Sets device rows to zero bytes (`cuMemsetD2D8`-style).
#[derivative_rule(memset)]
fn memset2d(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    for (d, _) in rows(pitch, pitch, height) {
        stream.memset_zeros(&mut dst.slice_mut(d..d + width))?;
    }
    Ok(())
}

/// A pitched device-to-device copy whose reverse writes the destination's old box back.
#[derivative_rule(copy2d, restore)]
fn copy2d_restoring(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    for (d, s) in rows(dpitch, spitch, height) {
        stream.memcpy_dtod(&src.slice(s..s + width), &mut dst.slice_mut(d..d + width))?;
    }
    Ok(())
}

#[test]
#[ignore = "needs a GPU"]
fn fill_with_an_active_value_returns_the_sum_of_the_weights() {
    // loss = Σ w ⊙ fill(v) over 1000 rows of 1001 elements (pitch 1003): dv = Σ_box w.
    let s = gpu();
    let (w, h, row) = (1001usize, 1000usize, 1003usize);
    let n = row * h;
    let weights: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 997.0 - 0.4)
        .collect();
    let reference: f64 = (0..n)
        .filter(|i| i % row < w)
        .map(|i| f64::from(weights[i]))
        .sum();
    let mut bits = None;
    for run in 0..10 {
        let mut y = s.alloc_zeros::<f32>(n).unwrap();
        let mut dy = s.clone_htod(&weights).unwrap();
        let t = fill2d_rule(&s, row * 4, w, h)
            .augmented_primal(Duplicated::new(&mut y, &mut dy), Active(1.5))
            .unwrap();
        let [dv] = fill2d_rule(&s, row * 4, w, h)
            .reverse(t, Duplicated::new(&mut y, &mut dy), Active(1.5))
            .unwrap();
        let err = (f64::from(dv) - reference).abs();
        assert!(
            err <= 0.5 * f64::from(f32::EPSILON) * reference.abs().max(1.0),
            "run {run}: {dv} vs {reference}"
        );
        assert_eq!(
            *bits.get_or_insert(dv.to_bits()),
            dv.to_bits(),
            "run {run} differs"
        );
        // The box of the cotangent is zeroed; the padding keeps its weights.
        let back = s.clone_dtoh(&dy).unwrap();
        for i in 0..n {
            let want = if i % row < w { 0.0 } else { weights[i] };
            assert_eq!(back[i], want, "dy[{i}]");
        }
    }
    // Forward: d_y[box] ← d_v, padding untouched.
    let mut y = s.alloc_zeros::<f32>(n).unwrap();
    let mut dy = s.clone_htod(&weights).unwrap();
    fill2d_rule(&s, row * 4, w, h)
        .forward(Duplicated::new(&mut y, &mut dy), Dual::new(1.5, 0.25))
        .unwrap();
    let back = s.clone_dtoh(&dy).unwrap();
    for i in 0..n {
        assert_eq!(
            back[i],
            if i % row < w { 0.25 } else { weights[i] },
            "dy[{i}]"
        );
    }
}

#[test]
#[ignore = "needs a GPU"]
fn fill_from_a_device_value_accumulates_on_the_stream() {
    let s = gpu();
    let (w, h, row) = (3usize, 4usize, 5usize);
    let n = row * h;
    let v = s.clone_htod(&[2.0f32]).unwrap();
    let mut dv = s.clone_htod(&[0.5f32]).unwrap();
    let mut y = s.alloc_zeros::<f32>(n).unwrap();
    let seed: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut dy = s.clone_htod(&seed).unwrap();
    let t = fill2d_from_rule(&s, row * 4, w, h)
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&v, &mut dv),
        )
        .unwrap();
    fill2d_from_rule(&s, row * 4, w, h)
        .reverse(
            t,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&v, &mut dv),
        )
        .unwrap();
    let sum: f32 = (0..n).filter(|i| i % row < w).map(|i| seed[i]).sum();
    assert_eq!(s.clone_dtoh(&dv).unwrap(), [0.5 + sum]);
    let back = s.clone_dtoh(&dy).unwrap();
    for i in 0..n {
        assert_eq!(back[i], if i % row < w { 0.0 } else { seed[i] });
    }
    assert_eq!(
        s.clone_dtoh(&y)
            .unwrap()
            .iter()
            .filter(|&&x| x == 2.0)
            .count(),
        w * h
    );
}

#[test]
#[ignore = "needs a GPU"]
fn memset_zeroes_the_shadows_box() {
    let s = gpu();
    let (w, h, row) = (7usize, 9usize, 10usize);
    let n = row * h;
    let seed: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
    let mut y = s.clone_htod(&seed).unwrap();
    let mut dy = [s.clone_htod(&seed).unwrap(), s.clone_htod(&seed).unwrap()];
    let [a, b] = &mut dy;
    memset2d_rule(&s, row * 4, w, h)
        .forward(Duplicated::batch(&mut y, [a, b]))
        .unwrap();
    let t = {
        let [a, b] = &mut dy;
        memset2d_rule(&s, row * 4, w, h)
            .augmented_primal(Duplicated::batch(&mut y, [a, b]))
            .unwrap()
    };
    for d in &mut dy {
        s.memcpy_htod(&seed, d).unwrap();
    }
    let [a, b] = &mut dy;
    memset2d_rule(&s, row * 4, w, h)
        .reverse(t, Duplicated::batch(&mut y, [a, b]))
        .unwrap();
    for d in &dy {
        let back = s.clone_dtoh(d).unwrap();
        for i in 0..n {
            assert_eq!(back[i], if i % row < w { 0.0 } else { seed[i] }, "dy[{i}]");
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn restore_brings_back_the_old_bytes() {
    let s = gpu();
    let (w, h, drow, srow) = (5usize, 6usize, 8usize, 7usize);
    let old: Vec<f32> = (0..drow * h).map(|i| -(i as f32) - 0.5).collect();
    let new: Vec<f32> = (0..srow * h).map(|i| i as f32 * 0.25).collect();
    let mut y = s.clone_htod(&old).unwrap();
    let mut dy = s.alloc_zeros::<f32>(drow * h).unwrap();
    let x = s.clone_htod(&new).unwrap();
    let mut dx = s.alloc_zeros::<f32>(srow * h).unwrap();
    let t = copy2d_restoring_rule(&s, drow * 4, srow * 4, w, h)
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    assert!(t.restores());
    let mid = s.clone_dtoh(&y).unwrap();
    assert_ne!(mid, old);
    copy2d_restoring_rule(&s, drow * 4, srow * 4, w, h)
        .reverse(
            t,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    let back = s.clone_dtoh(&y).unwrap();
    let same_bits = back
        .iter()
        .zip(&old)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(same_bits, "{back:?}");
}
