//! The seed with the runtime's ready-made bridged copies (`rules_runtime::autodiff::copies`):
//! cudarc's copies and memset, no rule of our own, no `unsafe`, no driver call. The first cases
//! of both runs: on pageable memory (`host`: pairs without a stream, so the copies run on the
//! host) and on the GPU in every memory kind.
use super::*;
use rules_runtime::autodiff::copies::AdData;
use rules_runtime::autodiff::{AdArray, AdArrayPair, copies};
use rules_runtime::memory::array::CudaArray;
use rules_runtime::cudarc::driver::CudaStream;
use std::sync::Arc;

/// The seed: sum(abs2, to_host(to_device(x))).
#[autodiff_reverse(df_seed, Duplicated, Duplicated, Active)]
fn f_seed(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
    let mut h = [0.0f32; 3];
    copies::memcpy_htod(dev, x);
    copies::memcpy_dtoh(&mut h, dev);
    h.iter().map(|v| v * v).sum()
}

/// The seed in forward mode.
#[autodiff_forward(df_seed_fwd, Dual, Dual, Dual)]
fn f_seed_fwd(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
    let mut h = [0.0f32; 3];
    copies::memcpy_htod(dev, x);
    copies::memcpy_dtoh(&mut h, dev);
    h.iter().map(|v| v * v).sum()
}

/// The buffer zeroed between the copies: f = 3 sum(h) + x[0] = x[0], dx = [1, 0, 0] (the
/// memset's reverse zeroes the derivative 3 that would otherwise reach x: [4, 3, 3]).
#[autodiff_reverse(df_zeroed, Duplicated, Duplicated, Active)]
fn f_zeroed(x: &[f32; 3], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    copies::memcpy_htod(dev, x);
    copies::memset_zeros(dev);
    copies::memcpy_dtoh(&mut h, dev);
    3.0 * h.iter().sum::<f32>() + x[0]
}

/// The pitched round trip: x's 3 × 3 box (rows 16 B apart) -> rows 32 B apart -> h's box.
#[autodiff_reverse(df_2d, Duplicated, Duplicated, Active)]
fn f_2d(x: &[f32; 12], dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 12];
    copies::memcpy_2d_htod(dev, 32, x, PITCH_X, (W, H));
    copies::memcpy_2d_dtoh(&mut h, PITCH_X, dev, 32, (W, H));
    box_sum_sq(&h)
}

/// sum(abs2, to_host(b ← a ← x)): a buffer-to-buffer copy in the middle (device → device,
/// device → pinned, ...: the kinds are the handles').
#[autodiff_reverse(df_chain, Duplicated, Duplicated, Duplicated, Active)]
fn f_chain(x: &[f32; 3], a: &AdBuf<f32>, b: &AdBuf<f32>) -> f32 {
    let mut h = [0.0f32; 3];
    copies::memcpy_htod(a, x);
    copies::memcpy(b, a);
    copies::memcpy_dtoh(&mut h, b);
    h.iter().map(|v| v * v).sum()
}

/// x -> device -> a CUDA array -> device -> h, through the ready-made array copies (a 2 × 2 box
/// of the 3 × 2 array at (1, 0), rows 8 B apart in the buffer, and back): dx = 2x.
#[autodiff_reverse(df_arr, Duplicated, Duplicated, Duplicated, Active)]
fn f_arr(x: &[f32; 4], buf: &AdBuf<f32>, arr: &AdArray<f32>) -> f32 {
    let mut h = [0.0f32; 4];
    copies::memcpy_htod(buf, x);
    copies::copy_to_array(arr, (1, 0, 0), buf, (8, 2), (2, 2, 1));
    copies::memset_zeros(buf);
    copies::copy_from_array(buf, (8, 2), arr, (1, 0, 0), (2, 2, 1));
    copies::memcpy_dtoh(&mut h, buf);
    h.iter().map(|v| v * v).sum()
}

/// An index buffer copied to the device and back inside the differentiated function (integer
/// copies run and carry no derivative), then used to gather: f = 1 h[2] + 2 h[0] + 3 h[1] = 11,
/// dx = [2, 3, 1].
#[autodiff_reverse(df_gather, Duplicated, Duplicated, Const, Active)]
fn f_gather(x: &[f32; 3], dev: &AdBuf<f32>, idx: &AdBuf<i32>) -> f32 {
    let mut h = [0.0f32; 3];
    let mut back = [0i32; 3];
    copies::memcpy_htod(idx, &[2i32, 0, 1]);
    copies::memcpy_dtoh(&mut back, idx);
    copies::memcpy_htod(dev, x);
    copies::memcpy_dtoh(&mut h, dev);
    let mut y = 0.0;
    for (k, i) in back.iter().enumerate() {
        y += h[*i as usize] * (k as f32 + 1.0);
    }
    y
}

/// The seed, the memset and the forward mode on handles of `$a` and `$da` (3 elements), and the
/// 2D round trip on `$a2`, `$da2` (24), each pair made by `$pair` (buffers of any type).
macro_rules! cases {
    ($kind:expr, $pair:expr, $a:expr, $da:expr, $a2:expr, $da2:expr) => {{
        let kind: &str = $kind;
        let mut ok = true;
        let mut p = $pair($a, $da);
        let (dev, ddev) = p.split();
        let (c0, mut dx) = (calls(), [0.0f32; 3]);
        let y = df_seed(&X, &mut dx, dev, ddev, 1.0);
        ok &= report(&format!("ready seed ({kind})"), y, dx, since(c0), 2, "");
        let (c0, mut dx) = (calls(), [0.0f32; 3]);
        let y = df_zeroed(&X, &mut dx, dev, ddev, 1.0);
        let want = [1.0, 0.0, 0.0];
        let name = format!("ready memset_zeros ({kind})");
        ok &= report_any(&name, (y, 1.0), &dx, &want, since(c0), 3, "");
        let ddev: &AdBuf<f32> = ddev;
        let name = format!("ready seed forward mode ({kind})");
        ok &= report_fwd(&name, |e| df_seed_fwd(&X, e, dev, ddev), 2);
        let mut p = $pair($a2, $da2);
        let (dev, ddev) = p.split();
        let (c0, mut dx) = (calls(), [0.0f32; 12]);
        let y = df_2d(&X2, &mut dx, dev, ddev, 1.0);
        let name = format!("ready 2D round trip ({kind})");
        ok &= report_any(&name, (y, F2), &dx, &WANT2, since(c0), 2, "");
        ok
    }};
}

/// Pageable memory, pairs without a stream: the copies run on the host.
pub(crate) fn run_host() -> bool {
    let (mut a, mut da) = (vec![0.0f32; 3], vec![0.0f32; 3]);
    let (mut a2, mut da2) = (vec![0.0f32; 24], vec![0.0f32; 24]);
    let host = |a, da| AdPair::new_host(a, da).expect("a host pair");
    cases!("pageable, on the host", host, &mut a[..], &mut da[..], &mut a2[..], &mut da2[..])
}

/// Device and unified memory; device → pinned and device → device chains.
pub(crate) fn run_gpu(s: &Arc<CudaStream>) -> Result<bool, Box<dyn std::error::Error>> {
    let on = |a, da| AdPair::new(a, da, s).expect("a pair");
    let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
    let (mut a2, mut da2) = (s.alloc_zeros::<f32>(24)?, s.alloc_zeros::<f32>(24)?);
    let mut ok = cases!("device", on, &mut a, &mut da, &mut a2, &mut da2);
    let unified = |n| -> Result<_, Box<dyn std::error::Error>> {
        // SAFETY: f32 is valid for any bits; filled before use.
        let mut u = unsafe { s.context().alloc_unified::<f32>(n, true)? };
        u.as_mut_slice()?.fill(0.0);
        Ok(u)
    };
    let (mut u, mut du, mut u2, mut du2) = (unified(3)?, unified(3)?, unified(24)?, unified(24)?);
    let on = |a, da| AdPair::new(a, da, s).expect("a pair");
    ok &= cases!("unified", on, &mut u, &mut du, &mut u2, &mut du2);
    // (Booleans, not (name, flag) pairs: rustc's type trees under -Zautodiff=Enable abort on an
    // array of pairs holding a `&str`, docs/autodiff.md.)
    for pinned in [true, false] {
        let kind = if pinned { "device -> pinned" } else { "device -> device" };
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let (mut d, mut dd) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        // SAFETY: f32 is valid for any bits; both are filled before use.
        let mut p = unsafe { s.context().alloc_pinned::<f32>(3)? };
        let mut dp = unsafe { s.context().alloc_pinned::<f32>(3)? };
        p.as_mut_slice()?.fill(0.0);
        dp.as_mut_slice()?.fill(0.0);
        let (c0, mut dx) = (calls(), [0.0f32; 3]);
        let y = {
            let mut pa = AdPair::new(&mut a, &mut da, s)?;
            let (a, da) = pa.split();
            if pinned {
                let mut pb = AdPair::new(&mut p, &mut dp, s)?;
                let (b, db) = pb.split();
                df_chain(&X, &mut dx, a, da, b, db, 1.0)
            } else {
                let mut pb = AdPair::new(&mut d, &mut dd, s)?;
                let (b, db) = pb.split();
                df_chain(&X, &mut dx, a, da, b, db, 1.0)
            }
        };
        ok &= report(&format!("ready chain ({kind})"), y, dx, since(c0), 3, "");
    }
    // An integer index buffer inside the differentiated function.
    {
        let (mut a, mut da) = (s.alloc_zeros::<f32>(3)?, s.alloc_zeros::<f32>(3)?);
        let mut idx = s.alloc_zeros::<i32>(3)?;
        let (c0, mut dx) = (calls(), [0.0f32; 3]);
        let y = {
            let mut pa = AdPair::new(&mut a, &mut da, s)?;
            let (dev, ddev) = pa.split();
            let data = AdData::new(&mut idx, s)?;
            df_gather(&X, &mut dx, dev, ddev, data.handle(), 1.0)
        };
        let (c, err) = (since(c0), take_error());
        let got = s.clone_dtoh(&idx)?;
        let good = y == 11.0 && dx == [2.0, 3.0, 1.0] && err.is_none() && got == [2, 0, 1];
        println!(
            "ready integer index buffer (pageable -> device -> pageable, i32): f = {y} (want 11), dx = {dx:?} (want [2.0, 3.0, 1.0]), device indices = {got:?}, bridge calls = {c:?}, error = {err:?} -> {}",
            if good { "OK" } else { "WRONG" }
        );
        ok &= good;
    }
    // Through a CUDA array.
    {
        let mut arr = CudaArray::<f32>::new(s.context(), 3, 2, 1)?;
        let mut darr = CudaArray::<f32>::new(s.context(), 3, 2, 1)?;
        arr.copy_from_host(s, &[0.0; 6])?;
        darr.copy_from_host(s, &[0.0; 6])?;
        let (mut b, mut db) = (s.alloc_zeros::<f32>(4)?, s.alloc_zeros::<f32>(4)?);
        let x4 = [1.0f32, 2.0, 3.0, 4.0];
        let (c0, mut dx) = (calls(), [0.0f32; 4]);
        let y = {
            let mut pb = AdPair::new(&mut b, &mut db, s)?;
            let (b, db) = pb.split();
            let mut pa = AdArrayPair::new(&mut arr, &mut darr, s)?;
            let (a, da) = pa.split();
            df_arr(&x4, &mut dx, b, db, a, da, 1.0)
        };
        let want = [2.0, 4.0, 6.0, 8.0];
        ok &= report_any("ready CUDA array box (device -> array -> device)", (y, 30.0), &dx, &want, since(c0), 5, "");
    }
    Ok(ok)
}
