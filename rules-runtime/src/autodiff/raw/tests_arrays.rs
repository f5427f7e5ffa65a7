//! The array bridges (`autodiff` on rules with a CUDA array side), called as Enzyme calls them:
//! the generated `extern "C"` primal, augmented primal, reverse and forward rule, each argument
//! followed by its shadow slot. GPU only (arrays are driver objects): `--ignored gpu_array_`.
//! The same rules run under Enzyme in `examples/autodiff` (its `array` cases).
use super::tapes::aug_ok;
use crate::autodiff::{AdArrayPair, AdBuf, AdPair, take_error};
use crate::error::Result;
use crate::memory::ShadowRead;
use crate::memory::array::{ArrayElement, CudaArray};
use crate::memory::linear::{self, Linear};
use crate::memory::raw::RawShadow;
use cudarc::driver::CudaStream;
use rules_macro::derivative_rule;
use std::sync::Arc;

/// A pageable 2-D box into an array at `(x, y)`; its rows `pitch` bytes apart.
#[derivative_rule(copy2d, crate = crate, autodiff)]
#[allow(clippy::too_many_arguments)]
pub fn ta_to_arr(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[src] src: &[f32],
    #[src_pitch] pitch: usize,
    #[width] w: usize,
    #[height] h: usize,
) -> Result<()> {
    linear::linear_to_array(stream, dst, (x, y, 0), src, (pitch, h), (w, h, 1))
}

/// A 2-D box of an array into linear memory of any kind (generic: the bridge passes a
/// `RawShadow` of an `AdBuf`'s kind).
#[derivative_rule(copy2d, crate = crate, autodiff(f32, f64))]
#[allow(clippy::too_many_arguments)]
pub fn ta_from_arr<T: ArrayElement, L: Linear<Elem = T> + ?Sized>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut L,
    #[dst_pitch] pitch: usize,
    #[src] src: &CudaArray<T>,
    #[src_x] x: usize,
    #[src_y] y: usize,
    #[width] w: usize,
    #[height] h: usize,
) -> Result<()> {
    linear::array_to_linear(stream, dst, (pitch, h), src, (x, y, 0), (w, h, 1))
}

/// A pageable host box out of an array (a slice destination).
#[derivative_rule(copy2d, crate = crate, autodiff)]
#[allow(clippy::too_many_arguments)]
pub fn ta_arr_to_host(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[dst_pitch] pitch: usize,
    #[src] src: &CudaArray<f32>,
    #[src_x] x: usize,
    #[src_y] y: usize,
    #[width] w: usize,
    #[height] h: usize,
) -> Result<()> {
    linear::array_to_linear(stream, dst, (pitch, h), src, (x, y, 0), (w, h, 1))
}

/// A box of one array into another.
#[derivative_rule(copy3d, crate = crate, autodiff)]
#[allow(clippy::too_many_arguments)]
pub fn ta_arr_to_arr(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[dst_x] dx: usize,
    #[dst_y] dy: usize,
    #[dst_z] dz: usize,
    #[src] src: &CudaArray<f32>,
    #[src_x] sx: usize,
    #[src_y] sy: usize,
    #[src_z] sz: usize,
    #[width] w: usize,
    #[height] h: usize,
    #[depth] d: usize,
) -> Result<()> {
    linear::array_to_array(stream, dst, (dx, dy, dz), src, (sx, sy, sz), (w, h, d))
}

/// A box of an array `← v` (staged through pageable memory).
fn set_box(
    stream: &CudaStream,
    dst: &mut CudaArray<f32>,
    at: (usize, usize),
    (w, h): (usize, usize),
    v: f32,
) -> Result<()> {
    let src = vec![v; w * h];
    linear::linear_to_array(
        stream,
        dst,
        (at.0, at.1, 0),
        &src[..],
        (w * 4, h),
        (w, h, 1),
    )
}

/// Rows of an array `← 0`.
#[derivative_rule(memset, crate = crate, autodiff)]
pub fn ta_zero_rows(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[width] w: usize,
    #[height] h: usize,
) -> Result<()> {
    set_box(stream, dst, (x, y), (w, h), 0.0)
}

/// Rows of an array `← v`.
#[derivative_rule(fill, crate = crate, autodiff)]
#[allow(clippy::too_many_arguments)]
pub fn ta_fill_rows(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[value] v: f32,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[width] w: usize,
    #[height] h: usize,
) -> Result<()> {
    set_box(stream, dst, (x, y), (w, h), v)
}

fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

/// The GPU's stream. These tests are `#[ignore]`d, so a machine without a GPU reports them as
/// ignored; run with `--ignored`, a missing GPU is a failure, not a pass (docs/testing.md).
fn gpu() -> Arc<CudaStream> {
    crate::driver::stream(0).expect("a GPU (this test was asked for with --ignored)")
}

fn array(s: &Arc<CudaStream>, w: usize, h: usize, fill: f32) -> CudaArray<f32> {
    let mut a = CudaArray::<f32>::new(s.context(), w, h, 1).unwrap();
    a.copy_from_host(s, &vec![fill; w * h]).unwrap();
    a
}

/// Raw pointers of a handle and its shadow slot, as Enzyme passes them.
fn ptrs<H>(p: &H, d: &H) -> (*const H, *const H) {
    (core::ptr::from_ref(p), core::ptr::from_ref(d))
}

/// The seed through an array: x (host rows 16 B apart, a 3 × 2 box) → array at (1, 1) → host
/// rows 12 B apart; `f = Σ y²`. The reverse, as Enzyme runs it (augmented primals in order,
/// reverses in the other), gives dx = 2x in the box and 0 in x's padding, and zeroes the array's
/// shadow; the array outside the box is untouched in the primal and the shadow.
#[test]
#[ignore = "needs a GPU"]
fn gpu_array_bridges_round_trip_gives_two_x() {
    let s = gpu();
    // The shadow of an intermediate starts at 0 where the function writes it (Enzyme zeroes
    // its own; the caller's pair must): 0 in the box, 7 outside, which must stay.
    let inside = |i: usize| (1..3).contains(&(i / 5)) && (1..4).contains(&(i % 5));
    let sh: Vec<f32> = (0..20).map(|i| if inside(i) { 0.0 } else { 7.0 }).collect();
    let (mut a, mut da) = (array(&s, 5, 4, -1.0), array(&s, 5, 4, 0.0));
    da.copy_from_host(&s, &sh).unwrap();
    let mut x = [1.0f32, 2.0, 3.0, 100.0, 4.0, 5.0, 6.0, 100.0];
    let mut dx = [0.0f32; 8];
    let mut y = [0.0f32; 6];
    let mut dy = [0.0f32; 6];
    let mut pair = AdArrayPair::new(&mut a, &mut da, &s).unwrap();
    let (pa, sa) = pair.split();
    let (pa, sa) = ptrs(pa, &*sa);
    let (xp, dxp, yp, dyp) = (
        x.as_mut_ptr(),
        dx.as_mut_ptr(),
        y.as_mut_ptr(),
        dy.as_mut_ptr(),
    );
    // SAFETY: live handles and slices of the lengths given; the shadows are of those lengths.
    unsafe {
        rules_ad_ta_to_arr_f32_aug(pa, sa, 1, 1, 1, 1, xp, dxp, 8, 8, 16, 16, 3, 3, 2, 2);
        assert!(aug_ok(), "{}", error_text());
        rules_ad_ta_arr_to_host_f32_aug(yp, dyp, 6, 6, 12, 12, pa, sa, 1, 1, 1, 1, 3, 3, 2, 2);
        assert!(aug_ok(), "{}", error_text());
    }
    assert_eq!(y, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    for (d, v) in dy.iter_mut().zip(y) {
        *d = 2.0 * v; // ∂f/∂y
    }
    // SAFETY: as above; the reverses in reverse order take those calls' tapes.
    unsafe {
        rules_ad_ta_arr_to_host_f32_rev(yp, dyp, 6, 6, 12, 12, pa, sa, 1, 1, 1, 1, 3, 3, 2, 2);
        rules_ad_ta_to_arr_f32_rev(pa, sa, 1, 1, 1, 1, xp, dxp, 8, 8, 16, 16, 3, 3, 2, 2);
    }
    assert_eq!(error_text(), "");
    assert_eq!(dx, [2.0, 4.0, 6.0, 0.0, 8.0, 10.0, 12.0, 0.0]);
    assert_eq!(dy, [0.0; 6], "the host cotangent consumed");
    let (pa, sa) = (a.to_host(&s).unwrap(), da.to_host(&s).unwrap());
    for r in 0..4 {
        for c in 0..5 {
            let inside = (1..3).contains(&r) && (1..4).contains(&c);
            let i = r * 5 + c;
            let want_a = if inside { x[(r - 1) * 4 + c - 1] } else { -1.0 };
            assert_eq!(pa[i], want_a, "array at ({c}, {r})");
            assert_eq!(
                sa[i],
                if inside { 0.0 } else { 7.0 },
                "shadow at ({c}, {r})"
            );
        }
    }
}

/// An array into device memory through the generic rule (`L` = `RawShadow<T>` of an `AdBuf`),
/// f64; then the forward rule: the tangent moves with the primal.
#[test]
#[ignore = "needs a GPU"]
fn gpu_array_bridges_generic_linear_side_and_forward_mode() {
    let s = gpu();
    let mut a = CudaArray::<f64>::new(s.context(), 4, 2, 1).unwrap();
    a.copy_from_host(&s, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
        .unwrap();
    let mut da = CudaArray::<f64>::new(s.context(), 4, 2, 1).unwrap();
    da.copy_from_host(&s, &[0.5; 8]).unwrap();
    let (mut v, mut dv) = (
        s.alloc_zeros::<f64>(6).unwrap(),
        s.alloc_zeros::<f64>(6).unwrap(),
    );
    {
        let mut pa = AdArrayPair::new(&mut a, &mut da, &s).unwrap();
        let mut pv = AdPair::new(&mut v, &mut dv, &s).unwrap();
        let (ha, hda) = pa.split();
        let (hv, hdv) = pv.split();
        let (ha, hda) = ptrs(ha, &*hda);
        let (hv, hdv) = ptrs(hv, &*hdv);
        // The box (1, 0) .. 3 × 2 into rows of 3 (24 B): forward mode, tangents 0.5 → dv.
        // SAFETY: live handles.
        unsafe {
            rules_ad_ta_from_arr_f64_fwd(hv, hdv, 24, 24, ha, hda, 1, 1, 0, 0, 3, 3, 2, 2);
        }
        assert_eq!(error_text(), "");
        // The safe function, outside differentiation: the primal only.
        let (hv, _) = pv.split();
        ta_from_arr_ad_f64(hv, 24, pa.split().0, 0, 0, 3, 2);
        assert_eq!(error_text(), "");
    }
    assert_eq!(s.clone_dtoh(&v).unwrap(), [1.0, 2.0, 3.0, 5.0, 6.0, 7.0]);
    assert_eq!(s.clone_dtoh(&dv).unwrap(), [0.5; 6]);
}

/// Array → array, a memset and a fill of array rows: the reverse moves the box's cotangent, the
/// memset zeroes what it overwrote, the fill returns Σ of its box's cotangent.
#[test]
#[ignore = "needs a GPU"]
fn gpu_array_bridges_array_to_array_memset_and_fill() {
    let s = gpu();
    let (mut a, mut da) = (array(&s, 4, 3, 1.0), array(&s, 4, 3, 0.0));
    let (mut b, mut db) = (array(&s, 4, 3, 2.0), array(&s, 4, 3, 3.0));
    {
        let mut pa = AdArrayPair::new(&mut a, &mut da, &s).unwrap();
        let mut pb = AdArrayPair::new(&mut b, &mut db, &s).unwrap();
        let (ha, hda) = pa.split();
        let (ha, hda) = ptrs(ha, &*hda);
        let (hb, hdb) = pb.split();
        let (hb, hdb) = ptrs(hb, &*hdb);
        // SAFETY: live handles (here and below); each tape once.
        unsafe {
            // b[(0,0) 2×2] ← a[(2,1) 2×2]; reverse: da[box] += db[box] (3), db[box] ← 0.
            rules_ad_ta_arr_to_arr_f32_aug(
                hb, hdb, 0, 0, 0, 0, 0, 0, ha, hda, 2, 2, 1, 1, 0, 0, 2, 2, 2, 2, 1, 1,
            );
            assert!(aug_ok(), "{}", error_text());
            rules_ad_ta_arr_to_arr_f32_rev(
                hb, hdb, 0, 0, 0, 0, 0, 0, ha, hda, 2, 2, 1, 1, 0, 0, 2, 2, 2, 2, 1, 1,
            );
            // a[(1,0) 3×1] ← 0; reverse: da there ← 0.
            rules_ad_ta_zero_rows_f32_aug(ha, hda, 1, 1, 0, 0, 3, 3, 1, 1);
            assert!(aug_ok(), "{}", error_text());
            rules_ad_ta_zero_rows_f32_rev(ha, hda, 1, 1, 0, 0, 3, 3, 1, 1);
            // b[(0,2) 4×1] ← 9; reverse: d_v = Σ db there (3 · 4 = 12), db there ← 0.
            rules_ad_ta_fill_rows_f32_aug(hb, hdb, 9.0, 0, 0, 2, 2, 4, 4, 1, 1);
            assert!(aug_ok(), "{}", error_text());
            let dv = rules_ad_ta_fill_rows_f32_rev(hb, hdb, 9.0, 0, 0, 2, 2, 4, 4, 1, 1);
            assert_eq!(dv, 12.0);
        }
        assert_eq!(error_text(), "");
    }
    #[rustfmt::skip]
    let want_da = [
        0.0, 0.0, 0.0, 0.0,
        0.0, 0.0, 3.0, 3.0,
        0.0, 0.0, 3.0, 3.0,
    ];
    assert_eq!(da.to_host(&s).unwrap(), want_da);
    #[rustfmt::skip]
    let want_a = [
        1.0, 0.0, 0.0, 0.0,
        1.0, 1.0, 1.0, 1.0,
        1.0, 1.0, 1.0, 1.0,
    ];
    assert_eq!(a.to_host(&s).unwrap(), want_a);
    #[rustfmt::skip]
    let want_db = [
        0.0, 0.0, 3.0, 3.0,
        0.0, 0.0, 3.0, 3.0,
        0.0, 0.0, 0.0, 0.0,
    ];
    assert_eq!(db.to_host(&s).unwrap(), want_db);
    #[rustfmt::skip]
    let want_b = [
        1.0, 1.0, 2.0, 2.0,
        1.0, 1.0, 2.0, 2.0,
        9.0, 9.0, 9.0, 9.0,
    ];
    assert_eq!(b.to_host(&s).unwrap(), want_b);
}

/// Every refusal leaves both arrays and their shadows as they were, and records a typed error:
/// one array on both sides, a shadow handle as the primal, another pair's shadow in the slot, an
/// inactive destination with an active source, a box outside the array, two streams, a pair of
/// two extents.
#[test]
#[ignore = "needs a GPU"]
fn gpu_array_bridges_refuse_misuse_and_change_nothing() {
    let s = gpu();
    let s2 = crate::driver::stream(0).unwrap();
    let (mut a, mut da) = (array(&s, 4, 2, 1.0), array(&s, 4, 2, 5.0));
    let (mut b, mut db) = (array(&s, 4, 2, 2.0), array(&s, 4, 2, 6.0));
    let (mut c, mut dc) = (array(&s, 4, 2, 3.0), array(&s, 4, 2, 4.0));
    let mut odd = array(&s, 3, 2, 0.0);
    let e = AdArrayPair::new(&mut a, &mut odd, &s)
        .err()
        .expect("two extents");
    assert!(e.to_string().contains("extent"), "{e}");
    let mut x = [1.0f32; 8];
    let mut dx = [0.0f32; 8];
    let (xp, dxp) = (x.as_mut_ptr(), dx.as_mut_ptr());
    let cases: Vec<(&str, String)> = {
        let mut pa = AdArrayPair::new(&mut a, &mut da, &s).unwrap();
        let mut pb = AdArrayPair::new(&mut b, &mut db, &s).unwrap();
        let mut pc = AdArrayPair::new(&mut c, &mut dc, &s2).unwrap();
        let (ha, hda) = pa.split();
        let (ha, hda) = ptrs(ha, &*hda);
        let (hb, hdb) = pb.split();
        let (hb, hdb) = ptrs(hb, &*hdb);
        let (hc, hdc) = pc.split();
        let (hc, hdc) = ptrs(hc, &*hdc);
        let mut out = Vec::new();
        let mut case = |name: &'static str, f: &dyn Fn()| {
            f();
            out.push((name, error_text()));
            assert!(!aug_ok(), "{name}: refused");
        };
        // SAFETY (every closure): live handles and slices; the refusals come before any use.
        let arr_to_arr = |d: (_, _), s: (_, _)| unsafe {
            rules_ad_ta_arr_to_arr_f32_aug(
                d.0, d.1, 0, 0, 0, 0, 0, 0, s.0, s.1, 0, 0, 0, 0, 0, 0, 2, 2, 1, 1, 1, 1,
            )
        };
        case("same array", &|| arr_to_arr((ha, hda), (ha, hda)));
        case("shadow as primal", &|| arr_to_arr((hda, hda), (hb, hdb)));
        case("another pair's shadow", &|| {
            arr_to_arr((ha, hdb), (hb, hda))
        });
        case("inactive dst", &|| arr_to_arr((ha, ha), (hb, hdb)));
        case("two streams", &|| arr_to_arr((ha, hda), (hc, hdc)));
        case("box outside", &|| unsafe {
            rules_ad_ta_to_arr_f32_aug(ha, hda, 3, 3, 0, 0, xp, dxp, 8, 8, 16, 16, 2, 2, 1, 1)
        });
        case("source too short", &|| unsafe {
            rules_ad_ta_to_arr_f32_aug(ha, hda, 0, 0, 0, 0, xp, dxp, 8, 8, 20, 20, 4, 4, 2, 2)
        });
        out
    };
    let want = [
        ("same array", "the same CUDA array"),
        ("shadow as primal", "got its shadow's"),
        ("another pair's shadow", "not this buffer's shadow"),
        ("inactive dst", "treated the destination as inactive"),
        ("two streams", "two streams"),
        ("box outside", "ta_to_arr (augmented primal)"),
        ("source too short", "ta_to_arr (augmented primal)"),
    ];
    for ((name, text), (wname, wtext)) in cases.iter().zip(want) {
        assert_eq!(*name, wname);
        assert!(text.contains(wtext), "{name}: {text}");
    }
    assert_eq!(a.to_host(&s).unwrap(), [1.0; 8]);
    assert_eq!(da.to_host(&s).unwrap(), [5.0; 8]);
    assert_eq!(b.to_host(&s).unwrap(), [2.0; 8]);
    assert_eq!(db.to_host(&s).unwrap(), [6.0; 8]);
    assert_eq!(c.to_host(&s).unwrap(), [3.0; 8]);
    assert_eq!(dc.to_host(&s).unwrap(), [4.0; 8]);
}

/// A device buffer given for the array's linear side through a `RawShadow` rule: the handle's
/// kind is the rule's memory kind (pinned here), whatever the `AdBuf` holds.
#[derivative_rule(copy, crate = crate, autodiff)]
pub fn ta_upload_raw(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[src] src: &RawShadow<f32>,
) -> Result<()> {
    let (w, h, d) = dst.extent();
    linear::whole_array(src.len(), (w, h, d)).map_err(crate::error::Error::primal)?;
    linear::linear_to_array(stream, dst, (0, 0, 0), src, (w * 4, h), (w, h, d))
}

/// A whole-array copy from pinned memory through a `RawShadow` rule, reverse: d_src += d_arr.
#[test]
#[ignore = "needs a GPU"]
fn gpu_array_bridges_raw_shadow_side_from_pinned_memory() {
    let s = gpu();
    let ctx = s.context().clone();
    // SAFETY: pinned allocations of 6 f32, written below before any read.
    let mut p = unsafe { ctx.alloc_pinned::<f32>(6) }.unwrap();
    let mut dp = unsafe { ctx.alloc_pinned::<f32>(6) }.unwrap();
    p.as_mut_slice()
        .unwrap()
        .copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    dp.as_mut_slice().unwrap().fill(1.0);
    let (mut a, mut da) = (array(&s, 3, 2, 0.0), array(&s, 3, 2, 2.0));
    {
        let mut pa = AdArrayPair::new(&mut a, &mut da, &s).unwrap();
        let mut pp = AdPair::new(&mut p, &mut dp, &s).unwrap();
        let (ha, hda) = pa.split();
        let (ha, hda) = ptrs(ha, &*hda);
        let (hp, hdp): (&AdBuf<f32>, _) = pp.split();
        let (hp, hdp) = ptrs(hp, &*hdp);
        // SAFETY: live handles; the tape once.
        unsafe {
            rules_ad_ta_upload_raw_f32_aug(ha, hda, hp, hdp);
            assert!(aug_ok(), "{}", error_text());
            rules_ad_ta_upload_raw_f32_rev(ha, hda, hp, hdp);
        }
        assert_eq!(error_text(), "");
    }
    assert_eq!(a.to_host(&s).unwrap(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // The reverse: d_src += d_array (2), then d_array ← 0.
    assert_eq!(dp.as_slice().unwrap(), [3.0; 6]);
    assert_eq!(da.to_host(&s).unwrap(), [0.0; 6]);
}
