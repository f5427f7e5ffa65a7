//! The GPU cases through CUDA arrays: the seed through a 1-D array (reverse and forward mode),
//! the pitched 2D round trip through a box of a 2-D array and device rows, and a memset and a
//! fill of a run of an array. An array is passed in as an `AdArray` handle of an `AdArrayPair`
//! (the array and its shadow array), made outside the differentiated function.
use super::*;
use rules_runtime::autodiff::{AdArray, AdArrayPair};
use rules_runtime::cudarc::driver::CudaStream;
use rules_runtime::memory::array::CudaArray;
use std::sync::Arc;

/// The seed through an array: sum(abs2, download_array(upload_array(x))).
#[autodiff_reverse(df_array, Duplicated, Duplicated, Active)]
fn f_array(x: &[f32; 3], arr: &AdArray<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_array_ad(arr, x);
    download_array_ad(&mut h, arr);
    h.iter().map(|v| v * v).sum()
}

/// The same in forward mode.
#[autodiff_forward(df_array_fwd, Dual, Dual, Dual)]
fn f_array_fwd(x: &[f32; 3], arr: &AdArray<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_array_ad(arr, x);
    download_array_ad(&mut h, arr);
    h.iter().map(|v| v * v).sum()
}

/// The pitched round trip: x's 3 × 3 box -> the array's box at (1, 1) -> device rows 32 bytes
/// apart (the generic rule: a `RawShadow` of the `AdBuf`) -> h's box.
#[autodiff_reverse(df_arr2d, Duplicated, Duplicated, Duplicated, Active)]
fn f_arr2d(x: &[f32; 12], arr: &AdArray<f32>, dev: &AdBuf<f32>) -> f32 {
    let mut h = [1.0f32; 12];
    rows_to_array_ad(arr, 1, 1, x, PITCH_X, W, H);
    array_to_rows_ad_f32(dev, 32, arr, 1, 1, W, H);
    download2d_ad(&mut h, PITCH_X, dev, 32, W, H);
    box_sum_sq(&h)
}

/// The seed with arr[0] <- 0 between the copies: dx = [0, 4, 6].
#[autodiff_reverse(df_array_set, Duplicated, Duplicated, Active)]
fn f_array_set(x: &[f32; 3], arr: &AdArray<f32>) -> f32 {
    let mut h = [1.0f32; 3];
    upload_array_ad(arr, x);
    zero_array_run_ad(arr, 0, 0, 1, 1);
    download_array_ad(&mut h, arr);
    h.iter().map(|v| v * v).sum()
}

/// The seed with arr[1..3] <- a between the copies: dx = [2, 0, 0], df/da = 4a.
#[autodiff_reverse(df_array_fill, Duplicated, Duplicated, Active, Active)]
fn f_array_fill(x: &[f32; 3], arr: &AdArray<f32>, a: f32) -> f32 {
    let mut h = [1.0f32; 3];
    upload_array_ad(arr, x);
    fill_array_run_ad(arr, a, 1, 0, 2, 1);
    download_array_ad(&mut h, arr);
    h.iter().map(|v| v * v).sum()
}

/// A `w × h` array (one row: a 1-D array) holding `v`.
fn array(
    s: &Arc<CudaStream>,
    w: usize,
    h: usize,
    v: f32,
) -> Result<CudaArray<f32>, Box<dyn std::error::Error>> {
    let mut a = CudaArray::<f32>::new(s.context(), w, h, 1)?;
    a.copy_from_host(s, &vec![v; w * h])?;
    Ok(a)
}

pub(crate) fn run_arrays(s: &Arc<CudaStream>) -> Result<bool, Box<dyn std::error::Error>> {
    let mut ok = true;
    // The seed through a 1-D array.
    {
        let (mut a, mut da) = (array(s, 3, 1, 0.0)?, array(s, 3, 1, 0.0)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pair = AdArrayPair::new(&mut a, &mut da, s)?;
            let (arr, darr) = pair.split();
            df_array(&X, &mut dx, arr, darr, 1.0)
        };
        let c = since(c0);
        let (prim, shad) = (a.to_host(s)?, da.to_host(s)?);
        let extra = format!(", array = {prim:?}, array shadow after = {shad:?}");
        ok &= report(
            "array  (pageable -> CUDA array -> pageable)",
            y,
            dx,
            c,
            2,
            &extra,
        ) && prim == X
            && shad == [0.0; 3];
    }
    // The same in forward mode.
    {
        let (mut a, mut da) = (array(s, 3, 1, 0.0)?, array(s, 3, 1, 0.0)?);
        let mut pair = AdArrayPair::new(&mut a, &mut da, s)?;
        let (arr, darr) = pair.split();
        let darr: &AdArray<f32> = darr;
        ok &= report_fwd(
            "array forward mode (pageable -> CUDA array -> pageable)",
            |e| df_array_fwd(&X, e, arr, darr),
            2,
        );
    }
    // The pitched round trip through a 5 × 4 array (its box at (1, 1); outside it the primal is
    // -1 and the shadow 5, which must not change; inside, the shadow starts at 0, as an
    // intermediate's does) and device rows 32 bytes apart.
    {
        let inside = |i: usize| (1..4).contains(&(i / 5)) && (1..4).contains(&(i % 5));
        let want_shad: Vec<f32> = (0..20).map(|i| if inside(i) { 0.0 } else { 5.0 }).collect();
        let (mut a, mut da) = (array(s, 5, 4, -1.0)?, array(s, 5, 4, 0.0)?);
        da.copy_from_host(s, &want_shad)?;
        let (mut d, mut dd) = (s.alloc_zeros::<f32>(24)?, s.alloc_zeros::<f32>(24)?);
        let c0 = calls();
        let mut dx2 = [0.0f32; 12];
        let y = {
            let mut pa = AdArrayPair::new(&mut a, &mut da, s)?;
            let mut pd = AdPair::new(&mut d, &mut dd, s)?;
            let (arr, darr) = pa.split();
            let (dev, ddev) = pd.split();
            df_arr2d(&X2, &mut dx2, arr, darr, dev, ddev, 1.0)
        };
        let c = since(c0);
        let (prim, shad) = (a.to_host(s)?, da.to_host(s)?);
        let want_prim: Vec<f32> = (0..20)
            .map(|i| {
                if inside(i) {
                    X2[(i / 5 - 1) * 4 + i % 5 - 1]
                } else {
                    -1.0
                }
            })
            .collect();
        let extra = format!(", array after = {prim:?}, array shadow after = {shad:?}");
        ok &= report_any(
            "array2d (pageable rows -> 5x4 array at (1,1) -> device rows -> pageable rows, 3x3 box)",
            (y, F2),
            &dx2,
            &WANT2,
            c,
            3,
            &extra,
        ) && prim == want_prim
            && shad == want_shad;
    }
    // A memset of arr[0] between the seed's copies.
    {
        let (mut a, mut da) = (array(s, 3, 1, 0.0)?, array(s, 3, 1, 0.0)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let y = {
            let mut pair = AdArrayPair::new(&mut a, &mut da, s)?;
            let (arr, darr) = pair.split();
            df_array_set(&X, &mut dx, arr, darr, 1.0)
        };
        let c = since(c0);
        let (prim, shad) = (a.to_host(s)?, da.to_host(s)?);
        let extra = format!(", array = {prim:?}, array shadow after = {shad:?}");
        ok &= report_any(
            "array memset (pageable -> array, arr[0] <- 0 -> pageable)",
            (y, 13.0),
            &dx,
            &[0.0, 4.0, 6.0],
            c,
            3,
            &extra,
        ) && prim == [0.0, 2.0, 3.0]
            && shad == [0.0; 3];
    }
    // A fill of arr[1..3] with an active value between the seed's copies.
    {
        let (mut a, mut da) = (array(s, 3, 1, 0.0)?, array(s, 3, 1, 0.0)?);
        let c0 = calls();
        let mut dx = [0.0f32; 3];
        let (y, dv) = {
            let mut pair = AdArrayPair::new(&mut a, &mut da, s)?;
            let (arr, darr) = pair.split();
            df_array_fill(&X, &mut dx, arr, darr, 5.0, 1.0)
        };
        let c = since(c0);
        let (prim, shad) = (a.to_host(s)?, da.to_host(s)?);
        let extra = format!(", array = {prim:?}, array shadow after = {shad:?}");
        ok &= report_any(
            "array fill (pageable -> array, arr[1..3] <- a = 5 -> pageable), reverse",
            (y, 51.0),
            &[dx[0], dx[1], dx[2], dv],
            &[2.0, 0.0, 0.0, 20.0],
            c,
            3,
            &extra,
        ) && prim == [1.0, 5.0, 5.0]
            && shad == [0.0; 3];
    }
    Ok(ok)
}
