//! The ready-made bridged copies (`autodiff::copies`), called as Enzyme calls them: each argument
//! followed by its shadow slot. Pageable memory without a stream runs on every machine; the
//! other kinds need a GPU (`--ignored gpu_ready_`). The same bridges run under Enzyme in
//! `examples/autodiff` (its `ready` cases).
use super::ready::{for_f32 as b, for_f64};
use super::tapes::aug_ok;
use crate::autodiff::{AdBuf, AdPair, copies, take_error};
use cudarc::driver::CudaStream;
use std::sync::Arc;

fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

/// The seed, f(x) = sum(abs2, to_host(to_device(x))), through `memcpy_htod` and `memcpy_dtoh` on
/// the handles of `pair` (any kind), reverse mode as Enzyme runs it: both augmented primals,
/// then the seed of the reverse pass (df/dh = 2h), then both reverses in reverse order.
fn seed_reverse(dev: &AdBuf<f32>, ddev: &AdBuf<f32>) -> [f32; 3] {
    let (mut x, mut dx) = ([1.0f32, 2.0, 3.0], [0.0f32; 3]);
    let (mut h, mut dh) = ([0.0f32; 3], [0.0f32; 3]);
    // SAFETY (every call): live handles of one pair, arrays of 3 elements and their shadows.
    unsafe { b::htod_aug(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert!(aug_ok(), "{}", error_text());
    unsafe { b::dtoh_aug(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    assert!(aug_ok(), "{}", error_text());
    assert_eq!(h, x, "the primal round trip");
    for (g, v) in dh.iter_mut().zip(&h) {
        *g = 2.0 * v;
    }
    unsafe { b::dtoh_rev(h.as_mut_ptr(), dh.as_mut_ptr(), 3, 3, dev, ddev) };
    unsafe { b::htod_rev(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert_eq!(error_text(), "");
    assert_eq!(dh, [0.0; 3], "the destination's derivative is consumed");
    dx
}

#[test]
fn ready_seed_on_pageable_memory_gives_two_x() {
    let (mut a, mut da) = (vec![0.0f32; 3], vec![0.0f32; 3]);
    let mut pair = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let (dev, ddev) = pair.split();
    assert_eq!(seed_reverse(dev, ddev), [2.0, 4.0, 6.0]);
    drop(pair);
    assert_eq!(
        da, [0.0; 3],
        "the middle buffer's derivative is zeroed by htod's reverse"
    );
}

#[test]
fn ready_forward_mode_carries_the_tangent_and_the_safe_call_copies() {
    let (mut a, mut da) = (vec![0.0f32; 3], vec![9.0f32; 3]);
    let mut pair = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let (dev, ddev) = pair.split();
    let (mut x, mut tx) = ([1.0f32, 2.0, 3.0], [0.5f32, 0.25, 0.125]);
    // SAFETY: as in `seed_reverse`.
    unsafe { b::htod_fwd(dev, ddev, x.as_mut_ptr(), tx.as_mut_ptr(), 3, 3) };
    assert_eq!(error_text(), "");
    // Outside differentiation the safe function runs the copy (the primal bridge).
    let mut h = [0.0f32; 3];
    copies::memcpy_dtoh(&mut h, dev);
    assert_eq!(error_text(), "");
    drop(pair);
    assert_eq!((a, da, h), (vec![1.0, 2.0, 3.0], vec![0.5, 0.25, 0.125], x));
}

#[test]
fn ready_memset_zeros_zeroes_the_value_and_its_derivative() {
    let (mut a, mut da) = (vec![3.0f64; 4], vec![7.0f64; 4]);
    let mut pair = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let (dev, ddev) = pair.split();
    // SAFETY: live handles of one pair.
    unsafe { for_f64::zeros_aug(dev, ddev) };
    assert!(aug_ok(), "{}", error_text());
    unsafe { for_f64::zeros_rev(dev, ddev) };
    assert_eq!(error_text(), "");
    drop(pair);
    assert_eq!((a, da), (vec![0.0; 4], vec![0.0; 4]));
}

#[test]
fn ready_2d_copy_moves_the_box_and_leaves_the_padding() {
    // A 2 × 3 box: host rows 3 elements apart (12 B) into rows 4 apart (16 B).
    let mut x: Vec<f32> = (1..=9).map(|v| v as f32).collect();
    let mut dx = vec![0.0f32; 9];
    let (mut y, mut dy) = (vec![-1.0f32; 12], vec![5.0f32; 12]);
    let mut pair = AdPair::new_host(&mut y[..], &mut dy[..]).unwrap();
    let (dev, ddev) = pair.split();
    let (xp, dxp) = (x.as_mut_ptr(), dx.as_mut_ptr());
    // SAFETY: live handles; `x` and `dx` hold 9 elements.
    unsafe {
        b::box3_htod_aug(
            dev, ddev, 16, 16, 3, 3, xp, dxp, 9, 9, 12, 12, 3, 3, 2, 2, 3, 3, 1, 1,
        )
    };
    assert!(aug_ok(), "{}", error_text());
    unsafe {
        b::box3_htod_rev(
            dev, ddev, 16, 16, 3, 3, xp, dxp, 9, 9, 12, 12, 3, 3, 2, 2, 3, 3, 1, 1,
        )
    };
    assert_eq!(error_text(), "");
    drop(pair);
    #[rustfmt::skip]
    assert_eq!(y, [1.0, 2.0, -1.0, -1.0, 4.0, 5.0, -1.0, -1.0, 7.0, 8.0, -1.0, -1.0]);
    // d_x += d_y in the box (5 each), d_y's box zeroed, both paddings untouched.
    assert_eq!(dx, [5.0, 5.0, 0.0, 5.0, 5.0, 0.0, 5.0, 5.0, 0.0]);
    assert_eq!(
        dy,
        [0.0, 0.0, 5.0, 5.0, 0.0, 0.0, 5.0, 5.0, 0.0, 0.0, 5.0, 5.0]
    );
}

#[test]
fn ready_copies_refuse_bad_input_and_change_nothing() {
    let (mut a, mut da) = (vec![0.0f32; 4], vec![1.0f32; 4]);
    let mut pair = AdPair::new_host(&mut a[..], &mut da[..]).unwrap();
    let (dev, ddev) = pair.split();
    let (mut x, mut dx) = ([1.0f32, 2.0, 3.0], [0.0f32; 3]);
    // Three elements into four: cudarc's copies ask for equal lengths.
    // SAFETY: as in `seed_reverse`.
    unsafe { b::htod_aug(dev, ddev, x.as_mut_ptr(), dx.as_mut_ptr(), 3, 3) };
    assert!(!aug_ok());
    let e = error_text();
    assert!(
        e.starts_with("1: memcpy_htod (augmented primal):") && e.contains("length"),
        "{e}"
    );
    // A box that overruns the destination (3 rows 16 B apart need 12 elements, it has 4).
    unsafe {
        b::box3_htod_aug(
            dev,
            ddev,
            16,
            16,
            3,
            3,
            x.as_mut_ptr(),
            dx.as_mut_ptr(),
            3,
            3,
            4,
            4,
            3,
            3,
            1,
            1,
            3,
            3,
            1,
            1,
        )
    };
    assert!(!aug_ok());
    assert!(error_text().contains("memcpy_3d_htod (augmented primal)"));
    // A shadow handle in the primal's place.
    unsafe { b::zeros_aug(ddev, dev) };
    assert!(!aug_ok());
    assert!(error_text().contains("shadow handle"));
    drop(pair);
    assert_eq!((a, da), (vec![0.0; 4], vec![1.0; 4]), "nothing written");
}

/// The GPU's stream. These tests are `#[ignore]`d, so a machine without a GPU reports them as
/// ignored; run with `--ignored`, a missing GPU is a failure, not a pass.
fn gpu() -> Arc<CudaStream> {
    crate::cuda::stream(0).expect("a GPU (this test was asked for with --ignored)")
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_seed_in_every_memory_kind() {
    let s = gpu();
    let ctx = s.context();
    {
        let (mut a, mut da) = (
            s.alloc_zeros::<f32>(3).unwrap(),
            s.alloc_zeros::<f32>(3).unwrap(),
        );
        let mut pair = AdPair::new(&mut a, &mut da, &s).unwrap();
        let (dev, ddev) = pair.split();
        assert_eq!(seed_reverse(dev, ddev), [2.0, 4.0, 6.0], "device");
    }
    {
        // SAFETY: f32 is valid for any bits; the copies write it before it is read.
        let mut a = unsafe { ctx.alloc_unified::<f32>(3, true) }.unwrap();
        let mut da = unsafe { ctx.alloc_unified::<f32>(3, true) }.unwrap();
        da.as_mut_slice().unwrap().fill(0.0);
        let mut pair = AdPair::new(&mut a, &mut da, &s).unwrap();
        let (dev, ddev) = pair.split();
        assert_eq!(seed_reverse(dev, ddev), [2.0, 4.0, 6.0], "unified");
    }
    {
        // SAFETY: f32 is valid for any bits.
        let mut a = unsafe { ctx.alloc_pinned::<f32>(3) }.unwrap();
        let mut da = unsafe { ctx.alloc_pinned::<f32>(3) }.unwrap();
        da.as_mut_slice().unwrap().fill(0.0);
        let mut pair = AdPair::new(&mut a, &mut da, &s).unwrap();
        let (dev, ddev) = pair.split();
        assert_eq!(seed_reverse(dev, ddev), [2.0, 4.0, 6.0], "pinned");
    }
    {
        // Pageable memory with a stream: the driver's copy.
        let (mut a, mut da) = (vec![0.0f32; 3], vec![0.0f32; 3]);
        let mut pair = AdPair::new(&mut a, &mut da, &s).unwrap();
        let (dev, ddev) = pair.split();
        assert_eq!(
            seed_reverse(dev, ddev),
            [2.0, 4.0, 6.0],
            "pageable, with a stream"
        );
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_device_to_device_memset_and_boxes() {
    let s = gpu();
    let n = 1000usize;
    let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut a = s.clone_htod(&host).unwrap();
    let mut da = s.clone_htod(&vec![0.0f32; n]).unwrap();
    let mut b2 = s.alloc_zeros::<f32>(n).unwrap();
    let mut db = s.clone_htod(&vec![1.5f32; n]).unwrap();
    {
        let mut pa = AdPair::new(&mut a, &mut da, &s).unwrap();
        let mut pb = AdPair::new(&mut b2, &mut db, &s).unwrap();
        let (xa, dxa) = pa.split();
        let (xb, dxb) = pb.split();
        // b ← a (device to device): reverse d_a += d_b, d_b ← 0.
        // SAFETY: live handles of two pairs on one stream.
        unsafe { b::memcpy_aug(xb, dxb, xa, dxa) };
        assert!(aug_ok(), "{}", error_text());
        unsafe { b::memcpy_rev(xb, dxb, xa, dxa) };
        // a ← 0: its derivative zeroed.
        unsafe { b::zeros_aug(xa, dxa) };
        assert!(aug_ok(), "{}", error_text());
        assert_eq!(error_text(), "");
    }
    assert_eq!(s.clone_dtoh(&b2).unwrap(), host);
    assert_eq!(s.clone_dtoh(&a).unwrap(), vec![0.0; n]);
    assert_eq!(
        s.clone_dtoh(&da).unwrap(),
        vec![1.5; n],
        "d_a += d_b before a's memset"
    );
    assert_eq!(s.clone_dtoh(&db).unwrap(), vec![0.0; n]);
    // A 2D box device ← device with two pitches, 7 × 5 elements: rows 40 B and 36 B apart.
    let mut src = s.clone_htod(&host[..50]).unwrap();
    let mut dsrc = s.alloc_zeros::<f32>(50).unwrap();
    let mut dst = s.clone_htod(&vec![-1.0f32; 45]).unwrap();
    let mut ddst = s.clone_htod(&vec![2.0f32; 45]).unwrap();
    {
        let mut ps = AdPair::new(&mut src, &mut dsrc, &s).unwrap();
        let mut pd = AdPair::new(&mut dst, &mut ddst, &s).unwrap();
        let (xs, dxs) = ps.split();
        let (xd, dxd) = pd.split();
        // SAFETY: as above.
        unsafe {
            b::box3_aug(
                xd, dxd, 36, 36, 5, 5, xs, dxs, 40, 40, 5, 5, 7, 7, 5, 5, 1, 1,
            )
        };
        assert!(aug_ok(), "{}", error_text());
        unsafe {
            b::box3_rev(
                xd, dxd, 36, 36, 5, 5, xs, dxs, 40, 40, 5, 5, 7, 7, 5, 5, 1, 1,
            )
        };
        assert_eq!(error_text(), "");
    }
    let (y, dy, dx) = (
        s.clone_dtoh(&dst).unwrap(),
        s.clone_dtoh(&ddst).unwrap(),
        s.clone_dtoh(&dsrc).unwrap(),
    );
    for r in 0..5 {
        for c in 0..9 {
            let inside = c < 7;
            assert_eq!(
                y[r * 9 + c],
                if inside { host[r * 10 + c] } else { -1.0 },
                "y[{r}][{c}]"
            );
            assert_eq!(
                dy[r * 9 + c],
                if inside { 0.0 } else { 2.0 },
                "dy[{r}][{c}]"
            );
        }
        for c in 0..10 {
            assert_eq!(
                dx[r * 10 + c],
                if c < 7 { 2.0 } else { 0.0 },
                "dx[{r}][{c}]"
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_memset_refuses_pinned_memory_and_changes_nothing() {
    let s = gpu();
    let ctx = s.context();
    // SAFETY: f32 is valid for any bits; filled below.
    let mut a = unsafe { ctx.alloc_pinned::<f32>(4) }.unwrap();
    let mut da = unsafe { ctx.alloc_pinned::<f32>(4) }.unwrap();
    a.as_mut_slice().unwrap().fill(3.0);
    da.as_mut_slice().unwrap().fill(1.0);
    {
        let mut pair = AdPair::new(&mut a, &mut da, &s).unwrap();
        let (x, dx) = pair.split();
        // SAFETY: live handles of one pair.
        unsafe { b::zeros_aug(x, dx) };
        assert!(!aug_ok());
        assert!(error_text().contains("memset_zeros sets device or unified memory"));
    }
    assert_eq!(a.as_slice().unwrap(), [3.0; 4]);
    assert_eq!(da.as_slice().unwrap(), [1.0; 4]);
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_ready_integers_copy_and_refuse_bad_input() {
    use super::AdData;
    use super::ready_data::for_i32 as i;
    let s = gpu();
    let mut a = s.alloc_zeros::<i32>(4).unwrap();
    let mut b = s.clone_htod(&[9i32; 4]).unwrap();
    let mut idx = [3i32, 1, 4, 1];
    let mut out = [0i32; 4];
    {
        let da = AdData::new(&mut a, &s).unwrap();
        let db = AdData::new(&mut b, &s).unwrap();
        let (ha, hb) = (da.handle(), db.handle());
        // The safe calls: an integer copy is its primal in every mode (Enzyme runs it as an
        // inactive function).
        copies::memcpy_htod(ha, &idx);
        copies::memcpy(hb, ha);
        copies::memcpy_dtoh(&mut out, hb);
        assert_eq!(error_text(), "");
        assert_eq!(out, [3, 1, 4, 1]);
        // Bad input changes nothing: 3 of 4, then a memset, then the identity.
        // SAFETY: a live handle; `idx` holds 4 elements, of which 3 are given.
        unsafe { i::htod(ha, idx.as_mut_ptr(), 3) };
        assert!(error_text().contains("length"), "a length mismatch");
        copies::memset_zeros(ha);
        copies::memcpy(hb, hb);
        assert_eq!(error_text(), "");
    }
    assert_eq!(s.clone_dtoh(&a).unwrap(), [0; 4]);
    assert_eq!(s.clone_dtoh(&b).unwrap(), [3, 1, 4, 1]);
    // Two streams: refused before any copy.
    let s2 = s.fork().unwrap();
    {
        let da = AdData::new(&mut a, &s).unwrap();
        let db = AdData::new(&mut b, &s2).unwrap();
        copies::memcpy(da.handle(), db.handle());
        assert!(error_text().contains("two streams"));
    }
    assert_eq!(s.clone_dtoh(&a).unwrap(), [0; 4]);
}
