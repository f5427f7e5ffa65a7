//! The ready-made rules for cudarc's own copies (`rules_runtime::cudarc_rules`): the seed round
//! trip with no annotation of the user's, in every memory kind, forward and reverse; the adjoint
//! of each copy; memset; and bad input.
//!
//! `#[ignore]`d like the rest of the GPU suite: without a GPU they are reported as ignored
//! (skipped), never as passed; on a GPU machine run them with `--include-ignored`.

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, PinnedHostSlice, UnifiedSlice};
use rules_runtime::cudarc_rules::{
    memcpy_dtod, memcpy_dtod_rule, memcpy_dtoh_rule, memcpy_htod, memcpy_htod_rule,
    memset_zeros_rule,
};
use rules_runtime::prelude::*;
use rules_runtime::testing::adjoint_check;
use std::sync::Arc;

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

const X: [f32; 5] = [1.0, -2.0, 3.5, 0.25, -7.0];

fn pinned(s: &Arc<CudaStream>, v: &[f32]) -> PinnedHostSlice<f32> {
    // SAFETY: filled before any read.
    let mut p = unsafe { s.context().alloc_pinned::<f32>(v.len()) }.unwrap();
    p.as_mut_slice().unwrap().copy_from_slice(v);
    p
}

fn unified(s: &Arc<CudaStream>, v: &[f32]) -> UnifiedSlice<f32> {
    // SAFETY: filled before any read.
    let mut u = unsafe { s.context().alloc_unified::<f32>(v.len(), true) }.unwrap();
    u.as_mut_slice().unwrap().copy_from_slice(v);
    u
}

fn device(s: &Arc<CudaStream>, v: &[f32]) -> CudaSlice<f32> {
    s.clone_htod(v).unwrap()
}

fn pageable(_: &Arc<CudaStream>, v: &[f32]) -> Vec<f32> {
    v.to_vec()
}

/// Host memory as a slice, whatever holds it (synchronised first).
trait Read {
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32>;
}
impl Read for Vec<f32> {
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32> {
        s.synchronize().unwrap();
        self.clone()
    }
}
impl Read for PinnedHostSlice<f32> {
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32> {
        s.synchronize().unwrap();
        self.as_slice().unwrap().to_vec()
    }
}
impl Read for CudaSlice<f32> {
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32> {
        s.clone_dtoh(self).unwrap()
    }
}
impl Read for UnifiedSlice<f32> {
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32> {
        s.synchronize().unwrap();
        self.as_slice().unwrap().to_vec()
    }
}

/// `f(x) = sum(abs2, to_host(to_device(x)))` through the ready-made rules: `host_in` holds x,
/// `dev` the device copy, `host_out` the copy back. Reverse gives 2x exactly; forward in
/// direction v gives 2⟨x, v⟩ through the tangents (exactly, on these values).
macro_rules! round_trip {
    ($name:ident, $host_in:ident, $dev:ident, $host_out:ident) => {
        #[test]
        #[ignore = "needs a GPU"]
        fn $name() {
            let s = gpu();
            let n = X.len();
            let zeros = vec![0.0f32; n];
            let x = $host_in(&s, &X);
            let mut dx = $host_in(&s, &zeros);
            let (mut d, mut dd) = ($dev(&s, &zeros), $dev(&s, &zeros));
            let (mut h, mut dh) = ($host_out(&s, &zeros), $host_out(&s, &zeros));
            let up = memcpy_htod_rule(&s)
                .augmented_primal(
                    Duplicated::new(&mut d, &mut dd),
                    Duplicated::new(&x, &mut dx),
                )
                .unwrap();
            let down = memcpy_dtoh_rule(&s)
                .augmented_primal(
                    Duplicated::new(&mut h, &mut dh),
                    Duplicated::new(&d, &mut dd),
                )
                .unwrap();
            let y = h.read(&s);
            assert_eq!(y, X, "the primal round trip");
            let seed: Vec<f32> = y.iter().map(|v| 2.0 * v).collect();
            dh = $host_out(&s, &seed);
            memcpy_dtoh_rule(&s)
                .reverse(
                    down,
                    Duplicated::new(&mut h, &mut dh),
                    Duplicated::new(&d, &mut dd),
                )
                .unwrap();
            memcpy_htod_rule(&s)
                .reverse(
                    up,
                    Duplicated::new(&mut d, &mut dd),
                    Duplicated::new(&x, &mut dx),
                )
                .unwrap();
            let want: Vec<f32> = X.iter().map(|v| 2.0 * v).collect();
            assert_eq!(dx.read(&s), want, "dx == 2x exactly");
            assert_eq!(dd.read(&s), zeros, "the device shadow is zeroed");
            assert_eq!(dh.read(&s), zeros, "the host shadow is zeroed");

            // Forward: tangents through both copies.
            let v = [0.5f32, 1.0, -1.0, 2.0, 0.0];
            let dxv = $host_in(&s, &v);
            let (mut d, mut dd) = ($dev(&s, &zeros), $dev(&s, &zeros));
            let (mut h, mut dh) = ($host_out(&s, &zeros), $host_out(&s, &zeros));
            let mut dxv = dxv;
            memcpy_htod_rule(&s)
                .forward(
                    Duplicated::new(&mut d, &mut dd),
                    Duplicated::new(&x, &mut dxv),
                )
                .unwrap();
            memcpy_dtoh_rule(&s)
                .forward(
                    Duplicated::new(&mut h, &mut dh),
                    Duplicated::new(&d, &mut dd),
                )
                .unwrap();
            assert_eq!(dh.read(&s), v, "the tangent arrives unchanged");
            let df: f32 = h
                .read(&s)
                .iter()
                .zip(dh.read(&s))
                .map(|(y, t)| 2.0 * y * t)
                .sum();
            let want: f32 = X.iter().zip(v).map(|(x, v)| 2.0 * x * v).sum();
            assert_eq!(df, want);
        }
    };
}

round_trip!(seed_pageable_device_pageable, pageable, device, pageable);
round_trip!(seed_pinned_device_pinned, pinned, device, pinned);
round_trip!(seed_pageable_unified_pinned, pageable, unified, pinned);
round_trip!(seed_pinned_unified_pageable, pinned, unified, pageable);

#[test]
#[ignore = "needs a GPU"]
fn device_to_device_into_views_passes_the_adjoint_check() {
    let s = gpu();
    let n = 1000;
    let report = adjoint_check::<f32>(
        n,
        n,
        7,
        |v| {
            let x = s.alloc_zeros::<f32>(n).unwrap();
            let mut dx = s.clone_htod(v).unwrap();
            let mut y = s.alloc_zeros::<f32>(n + 8).unwrap();
            let mut dy = s.alloc_zeros::<f32>(n + 8).unwrap();
            let (mut yv, mut dyv) = (y.slice_mut(8..), dy.slice_mut(8..));
            memcpy_dtod_rule(&s).forward(
                Duplicated::new(&mut yv, &mut dyv),
                Duplicated::new(&x, &mut dx),
            )?;
            Ok(s.clone_dtoh(&dyv).unwrap())
        },
        |w| {
            let x = s.alloc_zeros::<f32>(n).unwrap();
            let mut dx = s.alloc_zeros::<f32>(n).unwrap();
            let mut y = s.alloc_zeros::<f32>(n).unwrap();
            let mut dy = s.clone_htod(w).unwrap();
            let t = memcpy_dtod_rule(&s).augmented_primal(
                Duplicated::new(&mut y, &mut dy),
                Duplicated::new(&x, &mut dx),
            )?;
            memcpy_dtod_rule(&s).reverse(
                t,
                Duplicated::new(&mut y, &mut dy),
                Duplicated::new(&x, &mut dx),
            )?;
            Ok(s.clone_dtoh(&dx).unwrap())
        },
    )
    .unwrap();
    report.assert_within(1e-6);
}

#[test]
#[ignore = "needs a GPU"]
fn memset_zeros_zeroes_the_shadow_and_the_buffer() {
    let s = gpu();
    let mut y = s.clone_htod(&X).unwrap();
    let mut dy = s.clone_htod(&X).unwrap();
    let t = memset_zeros_rule(&s)
        .augmented_primal(Duplicated::new(&mut y, &mut dy))
        .unwrap();
    assert_eq!(s.clone_dtoh(&y).unwrap(), [0.0; 5]);
    dy = s.clone_htod(&X).unwrap();
    memset_zeros_rule(&s)
        .reverse(t, Duplicated::new(&mut y, &mut dy))
        .unwrap();
    assert_eq!(s.clone_dtoh(&dy).unwrap(), [0.0; 5], "reverse: d_dst ← 0");
    let mut dy = s.clone_htod(&X).unwrap();
    memset_zeros_rule(&s)
        .forward(Duplicated::new(&mut y, &mut dy))
        .unwrap();
    assert_eq!(s.clone_dtoh(&dy).unwrap(), [0.0; 5], "forward: d_dst ← 0");
}

#[test]
#[ignore = "needs a GPU"]
fn lengths_that_disagree_are_errors_that_change_nothing() {
    let s = gpu();
    // The primitives themselves: the driver's answer, no panic (cudarc's would).
    let mut short = s.alloc_zeros::<f32>(3).unwrap();
    assert!(memcpy_htod(&s, &mut short, &X[..]).is_err());
    let long = s.clone_htod(&X).unwrap();
    assert!(memcpy_dtod(&s, &mut short, &long).is_err());
    // The rules: a typed error, before anything is written.
    let mut dshort = s.clone_htod(&[9.0f32; 3]).unwrap();
    let mut dx = vec![5.0f32; 5];
    let r = memcpy_htod_rule(&s).augmented_primal(
        Duplicated::new(&mut short, &mut dshort),
        Duplicated::new(&X[..], &mut dx[..]),
    );
    assert!(matches!(r, Err(Error::LengthMismatch { .. })), "{r:?}");
    assert_eq!(s.clone_dtoh(&short).unwrap(), [0.0; 3]);
    assert_eq!(s.clone_dtoh(&dshort).unwrap(), [9.0; 3]);
    assert_eq!(dx, [5.0; 5]);
}
