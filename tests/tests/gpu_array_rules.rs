//! GPU suite for copy rules between CUDA arrays and linear memory, through the generated rules of
//! the primitives in `rules_tests::arrays` (the raw driver's `cuMemcpy3DAsync`, annotated with
//! `copy3d`, `copy2d` and `copy`):
//! - the seed's round trip through an array, `x (host) → array → y (host)` and `x (device) →
//!   array → y (device)`, `loss = Σ y²`: `dx == 2x` exactly, forward and reverse, widths 1 and 3;
//!   after the reverse the array's shadows read back all `+0.0`;
//! - exact adjoint checks `⟨J v, w⟩ = ⟨v, Jᵀ w⟩` (values are multiples of 1/64, so every sum is
//!   exact) for 1D, 2D and 3D boxes with offsets, smaller than their arrays, linear → array,
//!   array → linear and array → array, with every element outside the box read back untouched.
//!
//! Every test is `#[ignore]`d so that a machine without a GPU reports it skipped, never passed.
//! On a GPU machine: `cargo test -p rules-tests --test gpu_array_rules -- --include-ignored`.

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream};
use rules_runtime::memory::array::CudaArray;
use rules_runtime::{Const, Duplicated};
use rules_tests::arrays::{
    array_to_array_augmented_primal, array_to_array_forward, array_to_array_reverse,
    download_array_augmented_primal, download_array_forward, download_array_reverse,
    from_array_augmented_primal, from_array_forward, from_array_reverse,
    rows_to_array_augmented_primal, rows_to_array_forward, rows_to_array_reverse,
    to_array_augmented_primal, to_array_forward, to_array_reverse, upload_array_augmented_primal,
    upload_array_forward, upload_array_reverse,
};
use std::sync::Arc;

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

/// Multiples of 1/64 in [-4, 4): products and their sums stay exact in f32 and f64.
fn vals(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) % 512) as f32 / 64.0 - 4.0
        })
        .collect()
}

fn array_from(s: &Arc<CudaStream>, (w, h, d): (usize, usize, usize), v: &[f32]) -> CudaArray<f32> {
    let mut a = CudaArray::new(s.context(), w, h, d).unwrap();
    a.copy_from_host(s, v).unwrap();
    a
}

fn all_zero(s: &Arc<CudaStream>, a: &CudaArray<f32>) -> bool {
    a.to_host(s).unwrap().iter().all(|v| v.to_bits() == 0)
}

fn slices<const N: usize>(v: &mut [Vec<f32>]) -> [&mut [f32]; N] {
    let v: Vec<&mut [f32]> = v.iter_mut().map(|x| &mut x[..]).collect();
    v.try_into().unwrap_or_else(|_| panic!("{N} lanes"))
}

fn lanes<T, const N: usize>(v: &mut [T]) -> [&mut T; N] {
    let v: Vec<&mut T> = v.iter_mut().collect();
    v.try_into().unwrap_or_else(|_| panic!("{N} lanes"))
}

/// The seed's round trip through an array, host memory on both sides, for `N` lanes: by the
/// `copy3d` rules with a box of the whole array, and by the whole-array `copy` rules.
fn host_round_trip<const N: usize>(s: &Arc<CudaStream>, ext: (usize, usize, usize)) {
    let (w, h, d) = ext;
    let n = w * h * d;
    let (pitch, rows) = (w * 4, h);
    let x = vals(n, 7);
    let scale = |k: usize| 2.0 * (k + 1) as f32;
    for whole_copy in [false, true] {
        let what = format!("{ext:?}, width {N}, whole-array copy: {whole_copy}");
        // Reverse.
        let mut arr = CudaArray::<f32>::new(s.context(), w, h, d).unwrap();
        let mut das: Vec<_> = (0..N).map(|_| arr.shadow_like(s).unwrap()).collect();
        let mut dxs = vec![vec![0.0f32; n]; N];
        let mut y = vec![0.0f32; n];
        let mut dys = vec![vec![0.0f32; n]; N];
        let (t_up, t_down) = if whole_copy {
            let up = upload_array_augmented_primal(
                s,
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
            )
            .unwrap();
            let down = download_array_augmented_primal(
                s,
                Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
            );
            (Err(up), Err(down.unwrap()))
        } else {
            let up = to_array_augmented_primal(
                s,
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                0,
                0,
                0,
                Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
                pitch,
                rows,
                w,
                h,
                d,
            )
            .unwrap();
            let down = from_array_augmented_primal(
                s,
                Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                pitch,
                rows,
                Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
                0,
                0,
                0,
                w,
                h,
                d,
            )
            .unwrap();
            (Ok(up), Ok(down))
        };
        s.synchronize().unwrap();
        assert_eq!(y, x, "the primal round trip, {what}");
        for (k, dy) in dys.iter_mut().enumerate() {
            *dy = y.iter().map(|v| scale(k) * v).collect();
        }
        match t_down {
            Ok(t) => from_array_reverse(
                t,
                s,
                Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                pitch,
                rows,
                Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
                0,
                0,
                0,
                w,
                h,
                d,
            ),
            Err(t) => download_array_reverse(
                t,
                s,
                Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
            ),
        }
        .unwrap();
        match t_up {
            Ok(t) => to_array_reverse(
                t,
                s,
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                0,
                0,
                0,
                Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
                pitch,
                rows,
                w,
                h,
                d,
            ),
            Err(t) => upload_array_reverse(
                t,
                s,
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
            ),
        }
        .unwrap();
        s.synchronize().unwrap();
        for k in 0..N {
            let want: Vec<f32> = x.iter().map(|v| scale(k) * v).collect();
            assert_eq!(dxs[k], want, "dx == 2x (lane {k}), {what}");
            assert!(dys[k].iter().all(|v| v.to_bits() == 0), "dy zeroed, {what}");
            assert!(
                all_zero(s, &das[k]),
                "array shadow all +0.0 (lane {k}), {what}"
            );
        }
        // Forward: the tangents 2x arrive in dy exactly.
        let mut arr = CudaArray::<f32>::new(s.context(), w, h, d).unwrap();
        let mut das: Vec<_> = (0..N).map(|_| arr.shadow_like(s).unwrap()).collect();
        let mut dxs: Vec<Vec<f32>> = (0..N)
            .map(|k| x.iter().map(|v| scale(k) * v).collect())
            .collect();
        let mut y = vec![0.0f32; n];
        let mut dys = vec![vec![0.0f32; n]; N];
        if whole_copy {
            upload_array_forward(
                s,
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
            )
            .unwrap();
            download_array_forward(
                s,
                Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
            )
            .unwrap();
        } else {
            to_array_forward(
                s,
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                0,
                0,
                0,
                Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
                pitch,
                rows,
                w,
                h,
                d,
            )
            .unwrap();
            from_array_forward(
                s,
                Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                pitch,
                rows,
                Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
                0,
                0,
                0,
                w,
                h,
                d,
            )
            .unwrap();
        }
        s.synchronize().unwrap();
        assert_eq!(y, x, "forward primal, {what}");
        for k in 0..N {
            assert_eq!(dys[k], dxs[k], "forward tangent (lane {k}), {what}");
        }
    }
}

/// The seed's round trip through an array in host memory: `dx == 2x` exactly, forward and
/// reverse, widths 1 and 3, 1D, 2D and 3D arrays; the array shadows end all `+0.0`.
#[test]
#[ignore = "needs a GPU"]
fn seed_round_trip_host_through_an_array() {
    let s = gpu();
    for ext in [(1000, 1, 1), (37, 11, 1), (9, 5, 4)] {
        host_round_trip::<1>(&s, ext);
        host_round_trip::<3>(&s, ext);
    }
}

/// The same with device memory on both sides: `x (device) → array → y (device)`.
fn device_round_trip<const N: usize>(s: &Arc<CudaStream>, ext: (usize, usize, usize)) {
    let (w, h, d) = ext;
    let n = w * h * d;
    let (pitch, rows) = (w * 4, h);
    let xh = vals(n, 11);
    let scale = |k: usize| 2.0 * (k + 1) as f32;
    let dev = |v: &[f32]| -> CudaSlice<f32> { s.clone_htod(v).unwrap() };
    let host = |v: &CudaSlice<f32>| -> Vec<f32> { s.clone_dtoh(v).unwrap() };
    let x = dev(&xh);
    // Reverse.
    let mut arr = CudaArray::<f32>::new(s.context(), w, h, d).unwrap();
    let mut das: Vec<_> = (0..N).map(|_| arr.shadow_like(s).unwrap()).collect();
    let mut dxs: Vec<CudaSlice<f32>> = (0..N).map(|_| dev(&vec![0.0; n])).collect();
    let mut y = dev(&vec![0.0; n]);
    let mut dys: Vec<CudaSlice<f32>> = (0..N).map(|_| dev(&vec![0.0; n])).collect();
    let t_up = to_array_augmented_primal(
        s,
        Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
        0,
        0,
        0,
        Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        pitch,
        rows,
        w,
        h,
        d,
    )
    .unwrap();
    let t_down = from_array_augmented_primal(
        s,
        Duplicated::batch(&mut y, lanes::<_, N>(&mut dys)),
        pitch,
        rows,
        Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
        0,
        0,
        0,
        w,
        h,
        d,
    )
    .unwrap();
    let yh = host(&y);
    assert_eq!(yh, xh, "the primal round trip, {ext:?}");
    for (k, dy) in dys.iter_mut().enumerate() {
        *dy = dev(&yh.iter().map(|v| scale(k) * v).collect::<Vec<_>>());
    }
    from_array_reverse(
        t_down,
        s,
        Duplicated::batch(&mut y, lanes::<_, N>(&mut dys)),
        pitch,
        rows,
        Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
        0,
        0,
        0,
        w,
        h,
        d,
    )
    .unwrap();
    to_array_reverse(
        t_up,
        s,
        Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
        0,
        0,
        0,
        Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        pitch,
        rows,
        w,
        h,
        d,
    )
    .unwrap();
    for k in 0..N {
        let want: Vec<f32> = xh.iter().map(|v| scale(k) * v).collect();
        assert_eq!(
            host(&dxs[k]),
            want,
            "dx == 2x (lane {k}), {ext:?}, width {N}"
        );
        assert!(host(&dys[k]).iter().all(|v| v.to_bits() == 0), "dy zeroed");
        assert!(all_zero(s, &das[k]), "array shadow all +0.0 (lane {k})");
    }
    // Forward.
    let mut arr = CudaArray::<f32>::new(s.context(), w, h, d).unwrap();
    let mut das: Vec<_> = (0..N).map(|_| arr.shadow_like(s).unwrap()).collect();
    let mut dxs: Vec<CudaSlice<f32>> = (0..N)
        .map(|k| dev(&xh.iter().map(|v| scale(k) * v).collect::<Vec<_>>()))
        .collect();
    let mut y = dev(&vec![0.0; n]);
    let mut dys: Vec<CudaSlice<f32>> = (0..N).map(|_| dev(&vec![0.0; n])).collect();
    to_array_forward(
        s,
        Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
        0,
        0,
        0,
        Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        pitch,
        rows,
        w,
        h,
        d,
    )
    .unwrap();
    from_array_forward(
        s,
        Duplicated::batch(&mut y, lanes::<_, N>(&mut dys)),
        pitch,
        rows,
        Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
        0,
        0,
        0,
        w,
        h,
        d,
    )
    .unwrap();
    assert_eq!(host(&y), xh, "forward primal");
    for k in 0..N {
        assert_eq!(host(&dys[k]), host(&dxs[k]), "forward tangent (lane {k})");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn seed_round_trip_device_through_an_array() {
    let s = gpu();
    for ext in [(1000, 1, 1), (37, 11, 1), (9, 5, 4)] {
        device_round_trip::<1>(&s, ext);
        device_round_trip::<3>(&s, ext);
    }
}

/// A box of `shape` at `at` in an array of extent `ext`, and a linear buffer holding the same box
/// at element `off`, rows `pitch` elements apart and slices `rows` rows apart.
#[derive(Clone, Copy, Debug)]
struct Case {
    ext: (usize, usize, usize),
    at: (usize, usize, usize),
    shape: (usize, usize, usize),
    pitch: usize,
    rows: usize,
}

const CASES: &[Case] = &[
    // 1D: a run inside a longer 1D array.
    Case {
        ext: (40, 1, 1),
        at: (5, 0, 0),
        shape: (17, 1, 1),
        pitch: 20,
        rows: 1,
    },
    // 2D: rows in the middle of a 2D array; the linear rows padded.
    Case {
        ext: (13, 9, 1),
        at: (2, 3, 0),
        shape: (7, 4, 1),
        pitch: 10,
        rows: 4,
    },
    // 3D: a box inside a 3D array; linear rows and slices padded.
    Case {
        ext: (9, 7, 5),
        at: (1, 2, 1),
        shape: (5, 3, 3),
        pitch: 7,
        rows: 5,
    },
];

impl Case {
    fn array_len(&self) -> usize {
        self.ext.0 * self.ext.1 * self.ext.2
    }
    fn linear_len(&self) -> usize {
        self.pitch * self.rows * self.shape.2
    }
    /// Index pairs `(array element, linear element)` of the box.
    fn pairs(&self) -> Vec<(usize, usize)> {
        let (w, h, _) = self.ext;
        let (x0, y0, z0) = self.at;
        let (bw, bh, bd) = self.shape;
        let mut v = Vec::new();
        for z in 0..bd {
            for y in 0..bh {
                for x in 0..bw {
                    let a = (x0 + x) + w * ((y0 + y) + h * (z0 + z));
                    let l = x + self.pitch * (y + self.rows * z);
                    v.push((a, l));
                }
            }
        }
        v
    }
    fn in_array_box(&self) -> Vec<bool> {
        let mut m = vec![false; self.array_len()];
        for (a, _) in self.pairs() {
            m[a] = true;
        }
        m
    }
    fn in_linear_box(&self) -> Vec<bool> {
        let mut m = vec![false; self.linear_len()];
        for (_, l) in self.pairs() {
            m[l] = true;
        }
        m
    }
}

fn dot(a: impl Iterator<Item = (f32, f32)>) -> f64 {
    a.map(|(x, y)| f64::from(x) * f64::from(y)).sum()
}

/// Linear (host) → a box of an array: `J` maps the linear box to the array box.
fn adjoint_to_array(s: &Arc<CudaStream>, c: Case) {
    let (w, h, d) = c.shape;
    let (x0, y0, z0) = c.at;
    let lp = c.pitch * 4;
    let (an, ln) = (c.array_len(), c.linear_len());
    let (in_a, in_l) = (c.in_array_box(), c.in_linear_box());
    let xs = vals(ln, 1);
    let old = vals(an, 2);
    // Forward: J v, with the array shadow's outside elements marked.
    let v = vals(ln, 3);
    let mark = vals(an, 4);
    let mut arr = array_from(s, c.ext, &old);
    let mut darr = array_from(s, c.ext, &mark);
    let mut vv = v.clone();
    to_array_forward(
        s,
        Duplicated::new(&mut arr, &mut darr),
        x0,
        y0,
        z0,
        Duplicated::new(&xs[..], &mut vv[..]),
        lp,
        c.rows,
        w,
        h,
        d,
    )
    .unwrap();
    let (a, jv) = (arr.to_host(s).unwrap(), darr.to_host(s).unwrap());
    for (i, &inside) in in_a.iter().enumerate() {
        if !inside {
            assert_eq!(
                a[i].to_bits(),
                old[i].to_bits(),
                "primal outside the box, {c:?}"
            );
            assert_eq!(
                jv[i].to_bits(),
                mark[i].to_bits(),
                "shadow outside the box, {c:?}"
            );
        }
    }
    for (ai, li) in c.pairs() {
        assert_eq!(a[ai], xs[li], "primal in the box, {c:?}");
    }
    // Reverse: Jᵀ w, the linear shadow seeded with u (kept outside the box).
    let wv = vals(an, 5);
    let u = vals(ln, 6);
    let mut arr = array_from(s, c.ext, &old);
    let mut darr = array_from(s, c.ext, &wv);
    let mut du = u.clone();
    let t = to_array_augmented_primal(
        s,
        Duplicated::new(&mut arr, &mut darr),
        x0,
        y0,
        z0,
        Duplicated::new(&xs[..], &mut du[..]),
        lp,
        c.rows,
        w,
        h,
        d,
    )
    .unwrap();
    to_array_reverse(
        t,
        s,
        Duplicated::new(&mut arr, &mut darr),
        x0,
        y0,
        z0,
        Duplicated::new(&xs[..], &mut du[..]),
        lp,
        c.rows,
        w,
        h,
        d,
    )
    .unwrap();
    s.synchronize().unwrap();
    let back = darr.to_host(s).unwrap();
    for (i, &inside) in in_a.iter().enumerate() {
        let want = if inside { 0.0 } else { wv[i] };
        assert_eq!(
            back[i].to_bits(),
            want.to_bits(),
            "array shadow after the reverse, {c:?}"
        );
    }
    for (i, &inside) in in_l.iter().enumerate() {
        if !inside {
            assert_eq!(du[i].to_bits(), u[i].to_bits(), "linear padding, {c:?}");
        }
    }
    let lhs = dot(c.pairs().into_iter().map(|(ai, _)| (jv[ai], wv[ai])));
    let rhs = dot(c.pairs().into_iter().map(|(_, li)| (v[li], du[li] - u[li])));
    assert_eq!(lhs, rhs, "⟨J v, w⟩ = ⟨v, Jᵀ w⟩, {c:?}");
}

/// A box of an array → linear (device) rows.
fn adjoint_from_array(s: &Arc<CudaStream>, c: Case) {
    let (w, h, d) = c.shape;
    let (x0, y0, z0) = c.at;
    let lp = c.pitch * 4;
    let (an, ln) = (c.array_len(), c.linear_len());
    let (in_a, in_l) = (c.in_array_box(), c.in_linear_box());
    let dev = |v: &[f32]| -> CudaSlice<f32> { s.clone_htod(v).unwrap() };
    let host = |v: &CudaSlice<f32>| -> Vec<f32> { s.clone_dtoh(v).unwrap() };
    let src = array_from(s, c.ext, &vals(an, 21));
    let old = vals(ln, 22);
    // Forward.
    let v = vals(an, 23);
    let mark = vals(ln, 24);
    let mut dsrc = array_from(s, c.ext, &v);
    let (mut y, mut dy) = (dev(&old), dev(&mark));
    from_array_forward(
        s,
        Duplicated::new(&mut y, &mut dy),
        lp,
        c.rows,
        Duplicated::new(&src, &mut dsrc),
        x0,
        y0,
        z0,
        w,
        h,
        d,
    )
    .unwrap();
    let (yh, jv) = (host(&y), host(&dy));
    for (i, &inside) in in_l.iter().enumerate() {
        if !inside {
            assert_eq!(yh[i].to_bits(), old[i].to_bits(), "primal padding, {c:?}");
            assert_eq!(jv[i].to_bits(), mark[i].to_bits(), "shadow padding, {c:?}");
        }
    }
    // Reverse.
    let wv = vals(ln, 25);
    let u = vals(an, 26);
    let mut dsrc = array_from(s, c.ext, &u);
    let (mut y, mut dy) = (dev(&old), dev(&wv));
    let t = from_array_augmented_primal(
        s,
        Duplicated::new(&mut y, &mut dy),
        lp,
        c.rows,
        Duplicated::new(&src, &mut dsrc),
        x0,
        y0,
        z0,
        w,
        h,
        d,
    )
    .unwrap();
    from_array_reverse(
        t,
        s,
        Duplicated::new(&mut y, &mut dy),
        lp,
        c.rows,
        Duplicated::new(&src, &mut dsrc),
        x0,
        y0,
        z0,
        w,
        h,
        d,
    )
    .unwrap();
    let (back, dyh) = (dsrc.to_host(s).unwrap(), host(&dy));
    for (i, &inside) in in_a.iter().enumerate() {
        if !inside {
            assert_eq!(
                back[i].to_bits(),
                u[i].to_bits(),
                "array shadow outside the box, {c:?}"
            );
        }
    }
    for (i, &inside) in in_l.iter().enumerate() {
        let want = if inside { 0.0 } else { wv[i] };
        assert_eq!(
            dyh[i].to_bits(),
            want.to_bits(),
            "linear shadow after the reverse, {c:?}"
        );
    }
    let lhs = dot(c.pairs().into_iter().map(|(_, li)| (jv[li], wv[li])));
    let rhs = dot(c
        .pairs()
        .into_iter()
        .map(|(ai, _)| (v[ai], back[ai] - u[ai])));
    assert_eq!(lhs, rhs, "⟨J v, w⟩ = ⟨v, Jᵀ w⟩, {c:?}");
}

/// Exact adjoints for boxes smaller than their arrays, with offsets, in 1D, 2D and 3D: linear →
/// array (host rows) and array → linear (device rows); everything outside the boxes untouched.
#[test]
#[ignore = "needs a GPU"]
fn adjoint_of_array_boxes() {
    let s = gpu();
    for &c in CASES {
        adjoint_to_array(&s, c);
        adjoint_from_array(&s, c);
    }
}

/// Array → array: a box of one array into a box at another place of another array; exact
/// adjoint, the arrays' other elements untouched; `Const` source: the destination box's
/// tangent is zeroed.
#[test]
#[ignore = "needs a GPU"]
fn adjoint_array_to_array() {
    let s = gpu();
    let (sext, dext) = ((9, 7, 5), (11, 6, 4));
    let (sat, dat, shape) = ((3, 1, 0), (0, 2, 1), (5, 4, 3));
    let idx = |(w, h, _): (usize, usize, usize), (x0, y0, z0): (usize, usize, usize), x, y, z| {
        (x0 + x) + w * ((y0 + y) + h * (z0 + z))
    };
    let pairs: Vec<(usize, usize)> = (0..shape.2)
        .flat_map(|z| (0..shape.1).flat_map(move |y| (0..shape.0).map(move |x| (x, y, z))))
        .map(|(x, y, z)| (idx(dext, dat, x, y, z), idx(sext, sat, x, y, z)))
        .collect();
    let (dn, sn) = (dext.0 * dext.1 * dext.2, sext.0 * sext.1 * sext.2);
    let mut in_d = vec![false; dn];
    for &(di, _) in &pairs {
        in_d[di] = true;
    }
    let src = array_from(&s, sext, &vals(sn, 31));
    let old = vals(dn, 32);
    let (w, h, d) = shape;
    // Forward.
    let v = vals(sn, 33);
    let mark = vals(dn, 34);
    let (mut dst, mut ddst) = (array_from(&s, dext, &old), array_from(&s, dext, &mark));
    let mut dsrc = array_from(&s, sext, &v);
    array_to_array_forward(
        &s,
        Duplicated::new(&mut dst, &mut ddst),
        dat.0,
        dat.1,
        dat.2,
        Duplicated::new(&src, &mut dsrc),
        sat.0,
        sat.1,
        sat.2,
        w,
        h,
        d,
    )
    .unwrap();
    let (p, jv) = (dst.to_host(&s).unwrap(), ddst.to_host(&s).unwrap());
    let sh = src.to_host(&s).unwrap();
    for i in 0..dn {
        if !in_d[i] {
            assert_eq!(p[i].to_bits(), old[i].to_bits(), "primal outside the box");
            assert_eq!(
                jv[i].to_bits(),
                mark[i].to_bits(),
                "tangent outside the box"
            );
        }
    }
    for &(di, si) in &pairs {
        assert_eq!(p[di], sh[si], "primal box");
        assert_eq!(jv[di], v[si], "tangent box");
    }
    // Reverse.
    let wv = vals(dn, 35);
    let u = vals(sn, 36);
    let (mut dst, mut ddst) = (array_from(&s, dext, &old), array_from(&s, dext, &wv));
    let mut dsrc = array_from(&s, sext, &u);
    let t = array_to_array_augmented_primal(
        &s,
        Duplicated::new(&mut dst, &mut ddst),
        dat.0,
        dat.1,
        dat.2,
        Duplicated::new(&src, &mut dsrc),
        sat.0,
        sat.1,
        sat.2,
        w,
        h,
        d,
    )
    .unwrap();
    array_to_array_reverse(
        t,
        &s,
        Duplicated::new(&mut dst, &mut ddst),
        dat.0,
        dat.1,
        dat.2,
        Duplicated::new(&src, &mut dsrc),
        sat.0,
        sat.1,
        sat.2,
        w,
        h,
        d,
    )
    .unwrap();
    let (back, dd) = (dsrc.to_host(&s).unwrap(), ddst.to_host(&s).unwrap());
    for i in 0..dn {
        let want = if in_d[i] { 0.0 } else { wv[i] };
        assert_eq!(
            dd[i].to_bits(),
            want.to_bits(),
            "destination shadow after the reverse"
        );
    }
    let in_s: Vec<bool> = {
        let mut m = vec![false; sn];
        for &(_, si) in &pairs {
            m[si] = true;
        }
        m
    };
    for i in 0..sn {
        if !in_s[i] {
            assert_eq!(
                back[i].to_bits(),
                u[i].to_bits(),
                "source shadow outside the box"
            );
        }
    }
    let lhs = dot(pairs.iter().map(|&(di, _)| (jv[di], wv[di])));
    let rhs = dot(pairs.iter().map(|&(_, si)| (v[si], back[si] - u[si])));
    assert_eq!(lhs, rhs, "⟨J v, w⟩ = ⟨v, Jᵀ w⟩");
    // A `Const` source: the forward zeroes the destination box's tangent, nothing else.
    let (mut dst, mut ddst) = (array_from(&s, dext, &old), array_from(&s, dext, &mark));
    array_to_array_forward(
        &s,
        Duplicated::new(&mut dst, &mut ddst),
        dat.0,
        dat.1,
        dat.2,
        Const(&src),
        sat.0,
        sat.1,
        sat.2,
        w,
        h,
        d,
    )
    .unwrap();
    let jv = ddst.to_host(&s).unwrap();
    for i in 0..dn {
        let want = if in_d[i] { 0.0 } else { mark[i] };
        assert_eq!(jv[i].to_bits(), want.to_bits(), "Const source");
    }
}

/// A `copy2d` rule (device rows → a 2D box of an array): reverse accumulates into the rows and
/// zeroes the array box; a box reaching past the array is `BadRegion` before anything is written.
#[test]
#[ignore = "needs a GPU"]
fn copy2d_rows_into_an_array() {
    let s = gpu();
    let (ext, at, (w, h)) = ((12, 8, 1), (4, 3), (6, 5));
    let pitch = 8usize;
    let n = ext.0 * ext.1;
    let xs = vals(pitch * h, 41);
    let x = s.clone_htod(&xs).unwrap();
    let mut dx = s.clone_htod(&vec![0.0f32; pitch * h]).unwrap();
    let old = vals(n, 42);
    let wv = vals(n, 43);
    let (mut arr, mut darr) = (array_from(&s, ext, &old), array_from(&s, ext, &wv));
    let t = rows_to_array_augmented_primal(
        &s,
        Duplicated::new(&mut arr, &mut darr),
        at.0,
        at.1,
        Duplicated::new(&x, &mut dx),
        pitch * 4,
        w,
        h,
    )
    .unwrap();
    rows_to_array_reverse(
        t,
        &s,
        Duplicated::new(&mut arr, &mut darr),
        at.0,
        at.1,
        Duplicated::new(&x, &mut dx),
        pitch * 4,
        w,
        h,
    )
    .unwrap();
    let (p, back, dxh) = (
        arr.to_host(&s).unwrap(),
        darr.to_host(&s).unwrap(),
        s.clone_dtoh(&dx).unwrap(),
    );
    for y in 0..ext.1 {
        for xx in 0..ext.0 {
            let i = xx + ext.0 * y;
            let inside = (at.0..at.0 + w).contains(&xx) && (at.1..at.1 + h).contains(&y);
            if inside {
                let l = (xx - at.0) + pitch * (y - at.1);
                assert_eq!(p[i], xs[l], "primal box");
                assert_eq!(back[i].to_bits(), 0, "array shadow box zeroed");
                assert_eq!(dxh[l], wv[i], "dx += d_array");
            } else {
                assert_eq!(p[i].to_bits(), old[i].to_bits(), "primal outside");
                assert_eq!(back[i].to_bits(), wv[i].to_bits(), "shadow outside");
            }
        }
    }
    for r in 0..h {
        for c in w..pitch {
            assert_eq!(dxh[c + pitch * r], 0.0, "padding of dx");
        }
    }
    // A box past the array's edge: refused before the primal runs.
    let before = arr.to_host(&s).unwrap();
    let e = rows_to_array_forward(
        &s,
        Duplicated::new(&mut arr, &mut darr),
        ext.0 - 2,
        at.1,
        Duplicated::new(&x, &mut dx),
        pitch * 4,
        w,
        h,
    );
    assert!(
        matches!(e, Err(rules_runtime::Error::BadRegion { .. })),
        "{e:?}"
    );
    assert_eq!(arr.to_host(&s).unwrap(), before, "nothing written");
}
