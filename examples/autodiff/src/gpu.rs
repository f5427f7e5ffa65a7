//! The cases on the GPU: device, pinned and unified memory, the pitched 2D round trip through
//! device rows, a device memset and fill, and the same through CUDA arrays (`arrays.rs`).
use super::*;

/// The seed: sum(abs2, to_host(to_device(x))), pageable host memory and a device buffer.
#[autodiff_reverse(df_seed, Duplicated, Duplicated, Active)]
fn f_seed(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    download_ad(&mut h, dev, 3);
    h.iter().map(|v| v * v).sum()
}

/// The seed in forward mode.
#[autodiff_forward(df_seed_fwd, Dual, Dual, Dual)]
fn f_seed_fwd(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    download_ad(&mut h, dev, 3);
    h.iter().map(|v| v * v).sum()
}

/// sum(abs2, to_host(copy_d2d(to_device(x)))).
#[autodiff_reverse(df_d2d, Duplicated, Duplicated, Duplicated, Active)]
fn f_d2d(x: &[f32; 3], a: &AdBuf<f32>, b: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(a, x, 3);
    copy_d2d_ad(b, a, 3);
    download_ad(&mut h, b, 3);
    h.iter().map(|v| v * v).sum()
}

/// sum(abs2, unpin(to_pinned(to_device(x)))): the download lands in pinned memory.
#[autodiff_reverse(df_pinned, Duplicated, Duplicated, Duplicated, Active)]
fn f_pinned(x: &[f32; 3], dev: &AdBuf<f32>, pin: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    download_pinned_ad(pin, dev, 3);
    unpin_ad(&mut h, pin, 3);
    h.iter().map(|v| v * v).sum()
}

/// sum(abs2, from_unified(to_unified(x))).
#[autodiff_reverse(df_unified, Duplicated, Duplicated, Active)]
fn f_unified(x: &[f32; 3], u: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    to_unified_ad(u, x, 3);
    from_unified_ad(&mut h, u, 3);
    h.iter().map(|v| v * v).sum()
}

/// The pitched round trip through the device: x's box -> device rows 32 bytes apart -> h's box.
#[autodiff_reverse(df_dev2d, Duplicated, Duplicated, Active)]
fn f_dev2d(x: &[f32; 12], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 12];
    upload2d_ad(dev, 32, x, PITCH_X, W, H);
    download2d_ad(&mut h, PITCH_X, dev, 32, W, H);
    box_sum_sq(&h)
}

/// The seed with a device memset between the copies: dx = [0, 4, 6].
#[autodiff_reverse(df_dev_set, Duplicated, Duplicated, Active)]
fn f_dev_set(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    set_device_ad(dev, 0, 1, 0);
    download_ad(&mut h, dev, 3);
    h.iter().map(|v| v * v).sum()
}

/// The fill on the device, between the seed's copies.
#[autodiff_reverse(df_dev_fill, Duplicated, Duplicated, Active, Active)]
fn f_dev_fill(x: &[f32; 3], dev: &AdBuf<f32>, a: f32) -> f32 {
    let mut h = [1.0f32; 3];
    upload_ad(dev, x, 3);
    fill_device_ad(dev, 1, 2, a);
    download_ad(&mut h, dev, 3);
    h.iter().map(|v| v * v).sum()
}

pub(crate) fn run_gpu() -> Result<bool, Box<dyn std::error::Error>> {
    let s = rules_runtime::cuda::stream(0)?;
    println!("device: {}", s.context().name()?);
    let mut ok = super::ready::run_gpu(&s)?;

    // Seed: device + pageable.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pair = AdPair::new(&mut a, &mut da, &s)?;
            let (dev, ddev) = pair.split();
            df_seed(&X, &mut dx, dev, ddev, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (prim, shad) = (s.clone_dtoh(&a)?, s.clone_dtoh(&da)?);
        let extra = format!(", device primal = {prim:?}, device shadow after = {shad:?}");
        ok &= report(
            "seed   (pageable -> device -> pageable)",
            y,
            dx,
            c,
            2,
            &extra,
        ) && prim == X
            && shad == [0.0; 3];
    }
    // Seed in forward mode.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let mut pair = AdPair::new(&mut a, &mut da, &s)?;
        let (dev, ddev) = pair.split();
        let ddev: &AdBuf<f32> = ddev;
        ok &= report_fwd(
            "seed forward mode (pageable -> device -> pageable)",
            |e| df_seed_fwd(&X, e, dev, ddev),
            2,
        );
    }
    // Device -> device in the middle.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let (mut b, mut db) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pa = AdPair::new(&mut a, &mut da, &s)?;
            let mut pb = AdPair::new(&mut b, &mut db, &s)?;
            let (a, da) = pa.split();
            let (b, db) = pb.split();
            df_d2d(&X, &mut dx, a, da, b, db, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (sa, sb) = (s.clone_dtoh(&da)?, s.clone_dtoh(&db)?);
        let extra = format!(", device shadows after = {sa:?} {sb:?}");
        ok &= report(
            "d2d    (pageable -> device -> device -> pageable)",
            y,
            dx,
            c,
            3,
            &extra,
        ) && sa == [0.0; 3]
            && sb == [0.0; 3];
    }
    // Pinned.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        // SAFETY: f32 is valid for any bits; both are filled before use.
        let mut p = unsafe { s.context().alloc_pinned::<f32>(3)? };
        let mut dp = unsafe { s.context().alloc_pinned::<f32>(3)? };
        p.as_mut_slice()?.fill(0.0);
        dp.as_mut_slice()?.fill(0.0);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pa = AdPair::new(&mut a, &mut da, &s)?;
            let mut pp = AdPair::new(&mut p, &mut dp, &s)?;
            let (a, da) = pa.split();
            let (p, dpp) = pp.split();
            df_pinned(&X, &mut dx, a, da, p, dpp, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (shad, pshad) = (s.clone_dtoh(&da)?, dp.as_slice()?.to_vec());
        let extra = format!(", device shadow after = {shad:?}, pinned shadow after = {pshad:?}");
        ok &= report(
            "pinned (pageable -> device -> pinned -> pageable)",
            y,
            dx,
            c,
            3,
            &extra,
        ) && shad == [0.0; 3]
            && pshad == [0.0; 3];
    }
    // Unified.
    {
        // SAFETY: f32 is valid for any bits; both are filled before use.
        let mut u = unsafe { s.context().alloc_unified::<f32>(3, true)? };
        let mut du = unsafe { s.context().alloc_unified::<f32>(3, true)? };
        u.as_mut_slice()?.fill(0.0);
        du.as_mut_slice()?.fill(0.0);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pu = AdPair::new(&mut u, &mut du, &s)?;
            let (u, dup) = pu.split();
            df_unified(&X, &mut dx, u, dup, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let ushad = du.as_slice()?.to_vec();
        let extra = format!(", unified shadow after = {ushad:?}");
        ok &= report(
            "unified(pageable -> unified -> pageable)",
            y,
            dx,
            c,
            2,
            &extra,
        ) && ushad == [0.0; 3];
    }
    // The pitched 2D round trip through device memory: device rows 32 bytes (8 elements)
    // apart, the device primal's padding -1 and its shadow's padding 5 (neither may change).
    {
        let dev0: Vec<f32> = (0..24)
            .map(|i| if i % 8 < W { 0.0 } else { -1.0 })
            .collect();
        let sh0: Vec<f32> = (0..24).map(|i| if i % 8 < W { 0.0 } else { 5.0 }).collect();
        let (mut a, mut da) = (s.clone_htod(&dev0)?, s.clone_htod(&sh0)?);
        let c0 = calls();
        let mut dx2 = [0.0f32; 12];
        let y = {
            let mut pair = AdPair::new(&mut a, &mut da, &s)?;
            let (dev, ddev) = pair.split();
            df_dev2d(&X2, &mut dx2, dev, ddev, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (prim, shad) = (s.clone_dtoh(&a)?, s.clone_dtoh(&da)?);
        let want_prim: Vec<f32> = (0..24)
            .map(|i| {
                if i % 8 < W {
                    X2[(i / 8) * 4 + i % 8]
                } else {
                    -1.0
                }
            })
            .collect();
        let extra = format!(", device rows after = {prim:?}, device shadow after = {shad:?}");
        ok &= report_any(
            "dev2d  (pageable rows -> device rows -> pageable rows, pitches 16/32/16 B, 3x3 box)",
            (y, F2),
            &dx2,
            &WANT2,
            c,
            2,
            &extra,
        ) && prim == want_prim
            && shad == sh0;
    }
    // A device memset between the seed's copies.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pair = AdPair::new(&mut a, &mut da, &s)?;
            let (dev, ddev) = pair.split();
            df_dev_set(&X, &mut dx, dev, ddev, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (prim, shad) = (s.clone_dtoh(&a)?, s.clone_dtoh(&da)?);
        let extra = format!(", device primal = {prim:?}, device shadow after = {shad:?}");
        ok &= report_any(
            "dev memset (pageable -> device, dev[0] <- 0 -> pageable)",
            (y, 13.0),
            &dx,
            &[0.0, 4.0, 6.0],
            c,
            3,
            &extra,
        ) && prim == [0.0, 2.0, 3.0]
            && shad == [0.0; 3];
    }
    // A device fill with an active value between the seed's copies.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let (y, dv) = {
            let mut pair = AdPair::new(&mut a, &mut da, &s)?;
            let (dev, ddev) = pair.split();
            df_dev_fill(&X, &mut dx, dev, ddev, 5.0, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let (prim, shad) = (s.clone_dtoh(&a)?, s.clone_dtoh(&da)?);
        let extra = format!(", device primal = {prim:?}, device shadow after = {shad:?}");
        ok &= report_any(
            "dev fill (pageable -> device, dev[1..3] <- a = 5 -> pageable), reverse",
            (y, 51.0),
            &[dx[0], dx[1], dx[2], dv],
            &[2.0, 0.0, 0.0, 20.0],
            c,
            3,
            &extra,
        ) && prim == [1.0, 5.0, 5.0]
            && shad == [0.0; 3];
    }
    ok &= super::arrays::run_arrays(&s)?;
    ok &= super::looped::run_dev_loop(&s)?;
    // A handle of the wrong kind: a device buffer where the rule declares unified memory.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let mut dx = [0.0f32; 3];
        let c0 = calls();
        let y = {
            let mut pa = AdPair::new(&mut a, &mut da, &s)?;
            let (a, da) = pa.split();
            df_unified(&X, &mut dx, a, da, 1.0)
        };
        s.synchronize()?;
        let c = since(c0);
        let err = take_error();
        let oke = dx == [0.0; 3] && err.is_some() && c.augmented_primal == 2;
        match &err {
            Some((first, n)) => println!(
                "misuse (device handle for unified memory): f = {y}, dx = {dx:?}, {n} errors, the first: {first} -> {}",
                if oke { "OK (refused)" } else { "WRONG" }
            ),
            None => println!("misuse (device handle for unified memory): no error -> WRONG"),
        }
        ok &= oke;
    }
    Ok(ok)
}

/// The loop case alone (`autodiff-seed loop`), e.g. under compute-sanitizer.
pub(crate) fn run_gpu_loop() -> Result<bool, Box<dyn std::error::Error>> {
    let s = rules_runtime::cuda::stream(0)?;
    println!("device: {}", s.context().name()?);
    super::looped::run_dev_loop(&s)
}
