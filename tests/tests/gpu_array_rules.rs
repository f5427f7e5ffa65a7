//! GPU suite for copy rules between CUDA arrays and linear memory, through the generated rules of
//! the primitives in `rules_tests::arrays` (the raw driver's `cuMemcpy3DAsync`, annotated with
//! `copy3d`, `copy2d` and `copy`):
//! - the seed's round trip through an array, `x (host) → array → y (host)` and `x (device) →
//!   array → y (device)`, `loss = Σ y²`: `dx == 2x` exactly, forward and reverse, widths 1 and 3;
//!   after the reverse the array's shadows read back all `+0.0`;
//! - exact adjoint checks `⟨J v, w⟩ = ⟨v, Jᵀ w⟩` (values are multiples of 1/64, so every sum is
//!   exact) for 1D, 2D and 3D boxes with offsets, smaller than their arrays, linear → array,
//!   array → linear and array → array, with every element outside the box read back untouched;
//! - the seed's round trip through boxes of arrays (1D, 2D and 3D, offsets, smaller than the
//!   array) with the linear side in each memory kind: pageable, device, pinned (`alloc_pinned`)
//!   and unified (`alloc_unified`), forward and reverse, widths 1 and 3: `dx == 2x` exactly, the
//!   array's other elements and the linear padding untouched, the array shadows all `+0.0` after
//!   the reverse (sign bit included);
//! - `restore` on a box of an array; `memset` and `fill` rules whose destination is an array
//!   (rows placed by `#[dst_x]`, `#[dst_y]`, or the whole array); array → array with odd
//!   offsets at width 3.
//!
//! Every test is `#[ignore]`d so that a machine without a GPU reports it skipped, never passed.
//! On a GPU machine: `cargo test -p rules-tests --test gpu_array_rules -- --include-ignored`.

use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, PinnedHostSlice, UnifiedSlice};
use rules_runtime::memory::array::CudaArray;
use rules_runtime::{Active, Const, Dual, Duplicated};
use rules_runtime::{FillRule, MemsetRule, RegionRule};
use rules_tests::arrays::{
    Linear, array_to_array_rule, download_array_rule, fill_array_rows_rule, fill_array_rule,
    from_array_rule, rows_to_array_rule, to_array_restoring_rule, to_array_rule, upload_array_rule,
    zero_array_rows_rule, zero_array_rule,
};
use std::sync::Arc;

/// Runs `body` in a child process of this test binary that runs only the test `name`, and asserts
/// that it passed there: a capture lasting anywhere in a process is invalidated by another thread
/// allocating (the other tests of this binary, beside it), whatever the capture's mode.
fn alone(name: &str, body: impl FnOnce()) {
    const CHILD: &str = "RULES_TESTS_ALONE";
    if std::env::var_os(CHILD).is_some_and(|v| v == name) {
        body();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", name, "--include-ignored", "--nocapture"])
        .env(CHILD, name)
        .output()
        .expect("the test binary itself");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "`{name}` in its own process ({}):\n{text}",
        out.status
    );
}

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
            let up = upload_array_rule(s)
                .augmented_primal(
                    Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                    Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
                )
                .unwrap();
            let down = download_array_rule(s).augmented_primal(
                Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
            );
            (Err(up), Err(down.unwrap()))
        } else {
            let up = to_array_rule(s, 0, 0, 0, pitch, rows, w, h, d)
                .augmented_primal(
                    Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                    Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
                )
                .unwrap();
            let down = from_array_rule(s, pitch, rows, 0, 0, 0, w, h, d)
                .augmented_primal(
                    Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                    Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
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
            Ok(t) => from_array_rule(s, pitch, rows, 0, 0, 0, w, h, d).reverse(
                t,
                Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
            ),
            Err(t) => download_array_rule(s).reverse(
                t,
                Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
            ),
        }
        .unwrap();
        match t_up {
            Ok(t) => to_array_rule(s, 0, 0, 0, pitch, rows, w, h, d).reverse(
                t,
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
            ),
            Err(t) => upload_array_rule(s).reverse(
                t,
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
            upload_array_rule(s)
                .forward(
                    Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                    Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
                )
                .unwrap();
            download_array_rule(s)
                .forward(
                    Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                    Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
                )
                .unwrap();
        } else {
            to_array_rule(s, 0, 0, 0, pitch, rows, w, h, d)
                .forward(
                    Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                    Duplicated::batch(&x[..], slices::<N>(&mut dxs)),
                )
                .unwrap();
            from_array_rule(s, pitch, rows, 0, 0, 0, w, h, d)
                .forward(
                    Duplicated::batch(&mut y[..], slices::<N>(&mut dys)),
                    Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
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
    let t_up = to_array_rule(s, 0, 0, 0, pitch, rows, w, h, d)
        .augmented_primal(
            Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
            Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        )
        .unwrap();
    let t_down = from_array_rule(s, pitch, rows, 0, 0, 0, w, h, d)
        .augmented_primal(
            Duplicated::batch(&mut y, lanes::<_, N>(&mut dys)),
            Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
        )
        .unwrap();
    let yh = host(&y);
    assert_eq!(yh, xh, "the primal round trip, {ext:?}");
    for (k, dy) in dys.iter_mut().enumerate() {
        *dy = dev(&yh.iter().map(|v| scale(k) * v).collect::<Vec<_>>());
    }
    from_array_rule(s, pitch, rows, 0, 0, 0, w, h, d)
        .reverse(
            t_down,
            Duplicated::batch(&mut y, lanes::<_, N>(&mut dys)),
            Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
        )
        .unwrap();
    to_array_rule(s, 0, 0, 0, pitch, rows, w, h, d)
        .reverse(
            t_up,
            Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
            Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
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
    to_array_rule(s, 0, 0, 0, pitch, rows, w, h, d)
        .forward(
            Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
            Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        )
        .unwrap();
    from_array_rule(s, pitch, rows, 0, 0, 0, w, h, d)
        .forward(
            Duplicated::batch(&mut y, lanes::<_, N>(&mut dys)),
            Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
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
    to_array_rule(s, x0, y0, z0, lp, c.rows, w, h, d)
        .forward(
            Duplicated::new(&mut arr, &mut darr),
            Duplicated::new(&xs[..], &mut vv[..]),
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
    let t = to_array_rule(s, x0, y0, z0, lp, c.rows, w, h, d)
        .augmented_primal(
            Duplicated::new(&mut arr, &mut darr),
            Duplicated::new(&xs[..], &mut du[..]),
        )
        .unwrap();
    to_array_rule(s, x0, y0, z0, lp, c.rows, w, h, d)
        .reverse(
            t,
            Duplicated::new(&mut arr, &mut darr),
            Duplicated::new(&xs[..], &mut du[..]),
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
    from_array_rule(s, lp, c.rows, x0, y0, z0, w, h, d)
        .forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&src, &mut dsrc),
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
    let t = from_array_rule(s, lp, c.rows, x0, y0, z0, w, h, d)
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&src, &mut dsrc),
        )
        .unwrap();
    from_array_rule(s, lp, c.rows, x0, y0, z0, w, h, d)
        .reverse(
            t,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&src, &mut dsrc),
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
    array_to_array_rule(&s, dat.0, dat.1, dat.2, sat.0, sat.1, sat.2, w, h, d)
        .forward(
            Duplicated::new(&mut dst, &mut ddst),
            Duplicated::new(&src, &mut dsrc),
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
    let t = array_to_array_rule(&s, dat.0, dat.1, dat.2, sat.0, sat.1, sat.2, w, h, d)
        .augmented_primal(
            Duplicated::new(&mut dst, &mut ddst),
            Duplicated::new(&src, &mut dsrc),
        )
        .unwrap();
    array_to_array_rule(&s, dat.0, dat.1, dat.2, sat.0, sat.1, sat.2, w, h, d)
        .reverse(
            t,
            Duplicated::new(&mut dst, &mut ddst),
            Duplicated::new(&src, &mut dsrc),
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
    array_to_array_rule(&s, dat.0, dat.1, dat.2, sat.0, sat.1, sat.2, w, h, d)
        .forward(Duplicated::new(&mut dst, &mut ddst), Const(&src))
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
    let t = rows_to_array_rule(&s, at.0, at.1, pitch * 4, w, h)
        .augmented_primal(
            Duplicated::new(&mut arr, &mut darr),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    rows_to_array_rule(&s, at.0, at.1, pitch * 4, w, h)
        .reverse(
            t,
            Duplicated::new(&mut arr, &mut darr),
            Duplicated::new(&x, &mut dx),
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
    let e = rows_to_array_rule(&s, ext.0 - 2, at.1, pitch * 4, w, h).forward(
        Duplicated::new(&mut arr, &mut darr),
        Duplicated::new(&x, &mut dx),
    );
    assert!(
        matches!(e, Err(rules_runtime::Error::BadRegion { .. })),
        "{e:?}"
    );
    assert_eq!(arr.to_host(&s).unwrap(), before, "nothing written");
}

// ---- The primitives called directly ----------------------------------------------------------

/// The primitives are safe functions, sound when called directly, not only through their rules:
/// each checks its own boxes and answers `CUDA_ERROR_INVALID_VALUE` before any driver call. On
/// the H200, `download_array` of a 128 × 128 array into 16 floats corrupted the heap before they
/// did; here the 16 floats are a window of a larger sentinel-filled buffer, which must read back
/// untouched, and the array too where it is the destination.
#[test]
#[ignore = "needs a GPU"]
fn primitives_called_directly_refuse_boxes_that_do_not_fit() {
    use rules_runtime::cudarc::driver::DriverError;
    use rules_runtime::cudarc::driver::sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE;
    use rules_tests::arrays::{
        array_to_array, download_array, fill_array_rows, from_array, rows_to_array, to_array,
        upload_array, zero_array_rows,
    };
    let s = gpu();
    // The runtime's ready-made primitives answer the driver's code inside `Error::Primal`, the
    // user-written ones here the code itself.
    trait Code {
        fn invalid_value(&self) -> bool;
    }
    impl Code for DriverError {
        fn invalid_value(&self) -> bool {
            *self == DriverError(CUDA_ERROR_INVALID_VALUE)
        }
    }
    impl Code for rules_runtime::Error {
        fn invalid_value(&self) -> bool {
            matches!(self, rules_runtime::Error::Primal(p)
                if p.downcast_ref::<rules_runtime::error::PrimalDriverError>()
                    .is_some_and(|d| d.code() == CUDA_ERROR_INVALID_VALUE))
        }
    }
    fn refused<E: Code + std::fmt::Debug>(r: Result<(), E>, what: &str) {
        assert!(r.as_ref().is_err_and(Code::invalid_value), "{what}: {r:?}");
    }
    let ext = (128, 128, 1);
    let n = ext.0 * ext.1;
    let old = vals(n, 51);
    let mut arr = array_from(&s, ext, &old);
    let sentinel = -7.25f32;
    let mut host = vec![sentinel; 64];
    refused(
        download_array(&s, &mut host[16..32], &arr),
        "a 128 × 128 array into 16 floats",
    );
    refused(
        upload_array(&s, &mut arr, &host[16..32]),
        "16 floats into a 128 × 128 array",
    );
    // A linear box past the end of its 16 elements, each way.
    refused(
        from_array(&s, &mut host[16..32], 64, 4, &arr, 0, 0, 0, 16, 4, 1),
        "4 rows of 16 into 16 floats",
    );
    refused(
        to_array(&s, &mut arr, 0, 0, 0, &host[16..32], 64, 4, 16, 4, 1),
        "4 rows of 16 from 16 floats",
    );
    // A row longer than its pitch, and slices taller than their rows.
    refused(
        from_array(&s, &mut host[..], 8, 4, &arr, 0, 0, 0, 4, 2, 1),
        "a row longer than the pitch",
    );
    refused(
        from_array(&s, &mut host[..], 16, 1, &arr, 0, 0, 0, 4, 2, 2),
        "slices of 1 row for boxes of 2",
    );
    // Array boxes past the array's edge (and an origin whose sum overflows).
    refused(
        from_array(&s, &mut host[..], 16, 1, &arr, 125, 0, 0, 4, 1, 1),
        "x past the edge",
    );
    refused(
        to_array(&s, &mut arr, usize::MAX, 0, 0, &host[..], 16, 1, 4, 1, 1),
        "an origin that overflows",
    );
    refused(
        zero_array_rows(&s, &mut arr, 0, 127, 4, 2),
        "rows past the bottom",
    );
    refused(
        fill_array_rows(&s, &mut arr, 1.0, 0, 0, 129, 1),
        "a row wider than the array",
    );
    let mut other = array_from(&s, (8, 8, 1), &vals(64, 52));
    refused(
        array_to_array(&s, &mut other, 0, 0, 0, &arr, 0, 0, 0, 16, 1, 1),
        "a box wider than its destination array",
    );
    let xd = s.clone_htod(&vec![1.0f32; 16]).unwrap();
    refused(
        rows_to_array(&s, &mut arr, 0, 0, &xd, 64, 16, 4),
        "4 device rows of 16 from 16 elements",
    );
    s.synchronize().unwrap();
    assert!(host.iter().all(|&v| v == sentinel), "host memory untouched");
    let back = arr.to_host(&s).unwrap();
    assert_eq!(back, old, "the array untouched");
    // And boxes that fit still copy.
    download_array(&s, &mut vec![0.0f32; n], &arr).unwrap();
    from_array(&s, &mut host[16..32], 16, 4, &arr, 0, 0, 0, 4, 4, 1).unwrap();
    for r in 0..4 {
        let row = &host[16 + 4 * r..20 + 4 * r];
        assert_eq!(row, &old[ext.0 * r..ext.0 * r + 4], "row {r} of the box");
    }
    assert!(
        host[..16].iter().all(|&v| v == sentinel),
        "before the window"
    );
    assert!(
        host[32..].iter().all(|&v| v == sentinel),
        "after the window"
    );
}

// ---- The linear side in every memory kind ---------------------------------------------------

/// Linear memory of one kind for the box round trips: made from host values, read back once the
/// stream's work is done.
trait Kind: Linear<Elem = f32> + Sized {
    const NAME: &'static str;
    fn make(s: &Arc<CudaStream>, v: &[f32]) -> Self;
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32>;
}

impl Kind for Vec<f32> {
    const NAME: &'static str = "pageable";
    fn make(_: &Arc<CudaStream>, v: &[f32]) -> Self {
        v.to_vec()
    }
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32> {
        s.synchronize().unwrap();
        self.clone()
    }
}

impl Kind for CudaSlice<f32> {
    const NAME: &'static str = "device";
    fn make(s: &Arc<CudaStream>, v: &[f32]) -> Self {
        s.clone_htod(v).unwrap()
    }
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32> {
        s.clone_dtoh(self).unwrap()
    }
}

impl Kind for PinnedHostSlice<f32> {
    const NAME: &'static str = "pinned";
    fn make(s: &Arc<CudaStream>, v: &[f32]) -> Self {
        // SAFETY: every element is written before it is read.
        let mut p = unsafe { s.context().alloc_pinned::<f32>(v.len()) }.unwrap();
        p.as_mut_slice().unwrap().copy_from_slice(v);
        p
    }
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32> {
        s.synchronize().unwrap();
        self.as_slice().unwrap().to_vec()
    }
}

impl Kind for UnifiedSlice<f32> {
    const NAME: &'static str = "unified";
    fn make(s: &Arc<CudaStream>, v: &[f32]) -> Self {
        // SAFETY: every element is written before it is read.
        let mut u = unsafe { s.context().alloc_unified::<f32>(v.len(), true) }.unwrap();
        u.as_mut_slice().unwrap().copy_from_slice(v);
        u
    }
    fn read(&self, s: &Arc<CudaStream>) -> Vec<f32> {
        s.synchronize().unwrap();
        self.as_slice().unwrap().to_vec()
    }
}

/// The padding of `x`, `dx`, `y` and `dy` (outside the box): values no rule may write.
const PAD_X: f32 = 5.25;
const PAD_Y: f32 = 7.5;
const PAD_DY: f32 = -3.25;

/// Boxes of the round trips: [`CASES`], a one-element-wide column at an array's last x, and
/// full-width rows at the last y of each slice with a packed linear side (slice height 1).
fn boxes() -> Vec<Case> {
    let mut v = CASES.to_vec();
    v.push(Case {
        ext: (16, 12, 1),
        at: (15, 1, 0),
        shape: (1, 10, 1),
        pitch: 3,
        rows: 10,
    });
    v.push(Case {
        ext: (6, 5, 7),
        at: (0, 4, 2),
        shape: (6, 1, 5),
        pitch: 6,
        rows: 1,
    });
    v
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `inside` where the mask is set, `outside[i]` elsewhere.
fn masked(
    mask: &[bool],
    inside: impl Fn(usize) -> f32,
    outside: impl Fn(usize) -> f32,
) -> Vec<f32> {
    (0..mask.len())
        .map(|i| if mask[i] { inside(i) } else { outside(i) })
        .collect()
}

/// The seed's round trip through a box of an array, `x (kind L) → array box → y (kind L)`,
/// `loss = Σ_box y²`, for `N` lanes (lane k seeded with `2(k+1)·y`):
/// - reverse: `dx == 2(k+1)·x` exactly in the box; the padding of `x`, `dx`, `y`, `dy` untouched;
///   `dy`'s box `+0.0`; the primal array's other elements untouched; every array shadow, whose
///   box starts at `-0.0` (a zero with its sign bit set), reads back all `+0.0`;
/// - forward: the tangents arrive in `dy`'s box exactly, through the array shadow's box; the
///   array shadows' other elements (marks) and every padding untouched.
fn box_round_trip<L: Kind, const N: usize>(s: &Arc<CudaStream>, c: Case) {
    let (w, h, d) = c.shape;
    let (x0, y0, z0) = c.at;
    let lp = c.pitch * 4;
    let (an, ln) = (c.array_len(), c.linear_len());
    let (in_a, in_l) = (c.in_array_box(), c.in_linear_box());
    let what = format!("{} memory, width {N}, {c:?}", L::NAME);
    let scale = |k: usize| 2.0 * (k + 1) as f32;
    let xv = vals(ln, 51);
    let xh = masked(&in_l, |i| xv[i], |_| PAD_X);
    let old = vals(an, 52);
    let x = L::make(s, &xh);
    // y after the primal round trip: x's box, and y's own padding.
    let want_y = masked(&in_l, |i| xv[i], |_| PAD_Y);
    // The box of the array as it should read after the primal copy.
    let mut want_arr = old.clone();
    for (ai, li) in c.pairs() {
        want_arr[ai] = xh[li];
    }

    // Reverse.
    let mut arr = array_from(s, c.ext, &old);
    let neg_box = masked(&in_a, |_| -0.0, |_| 0.0);
    let mut das: Vec<_> = (0..N).map(|_| array_from(s, c.ext, &neg_box)).collect();
    let dx0 = masked(&in_l, |_| 0.0, |_| PAD_X);
    let mut dxs: Vec<L> = (0..N).map(|_| L::make(s, &dx0)).collect();
    let mut y = L::make(s, &vec![PAD_Y; ln]);
    let mut dys: Vec<L> = (0..N).map(|_| L::make(s, &vec![PAD_DY; ln])).collect();
    let t_up = to_array_rule(s, x0, y0, z0, lp, c.rows, w, h, d)
        .augmented_primal(
            Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
            Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        )
        .unwrap();
    let t_down = from_array_rule(s, lp, c.rows, x0, y0, z0, w, h, d)
        .augmented_primal(
            Duplicated::batch(&mut y, lanes::<_, N>(&mut dys)),
            Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
        )
        .unwrap();
    let yh = y.read(s);
    assert_eq!(
        yh, want_y,
        "the primal round trip (box and padding of y), {what}"
    );
    assert_eq!(
        bits(&arr.to_host(s).unwrap()),
        bits(&want_arr),
        "the primal array: box copied, other elements untouched, {what}"
    );
    for (k, dy) in dys.iter_mut().enumerate() {
        *dy = L::make(s, &masked(&in_l, |i| scale(k) * yh[i], |_| PAD_DY));
    }
    from_array_rule(s, lp, c.rows, x0, y0, z0, w, h, d)
        .reverse(
            t_down,
            Duplicated::batch(&mut y, lanes::<_, N>(&mut dys)),
            Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
        )
        .unwrap();
    to_array_rule(s, x0, y0, z0, lp, c.rows, w, h, d)
        .reverse(
            t_up,
            Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
            Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        )
        .unwrap();
    s.synchronize().unwrap();
    for k in 0..N {
        let want = masked(&in_l, |i| scale(k) * xh[i], |_| PAD_X);
        assert_eq!(
            bits(&dxs[k].read(s)),
            bits(&want),
            "dx == 2x in the box, padding untouched (lane {k}), {what}"
        );
        let want = masked(&in_l, |_| 0.0, |_| PAD_DY);
        assert_eq!(
            bits(&dys[k].read(s)),
            bits(&want),
            "dy's box +0.0, padding untouched (lane {k}), {what}"
        );
        assert!(
            all_zero(s, &das[k]),
            "array shadow all +0.0 after the reverse (lane {k}), {what}"
        );
    }
    assert_eq!(
        bits(&arr.to_host(s).unwrap()),
        bits(&want_arr),
        "the reverse leaves the primal array alone, {what}"
    );
    assert_eq!(x.read(s), xh, "the primal x untouched, {what}");

    // Forward.
    let mut arr = array_from(s, c.ext, &old);
    let marks: Vec<Vec<f32>> = (0..N).map(|k| vals(an, 60 + k as u64)).collect();
    let mut das: Vec<_> = marks.iter().map(|m| array_from(s, c.ext, m)).collect();
    let tangents: Vec<Vec<f32>> = (0..N)
        .map(|k| masked(&in_l, |i| scale(k) * xh[i], |_| PAD_X))
        .collect();
    let mut dxs: Vec<L> = tangents.iter().map(|t| L::make(s, t)).collect();
    let mut y = L::make(s, &vec![PAD_Y; ln]);
    let mut dys: Vec<L> = (0..N).map(|_| L::make(s, &vec![PAD_DY; ln])).collect();
    to_array_rule(s, x0, y0, z0, lp, c.rows, w, h, d)
        .forward(
            Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
            Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        )
        .unwrap();
    from_array_rule(s, lp, c.rows, x0, y0, z0, w, h, d)
        .forward(
            Duplicated::batch(&mut y, lanes::<_, N>(&mut dys)),
            Duplicated::batch(&arr, lanes::<_, N>(&mut das)),
        )
        .unwrap();
    assert_eq!(y.read(s), want_y, "forward primal, {what}");
    assert_eq!(
        bits(&arr.to_host(s).unwrap()),
        bits(&want_arr),
        "forward primal array, {what}"
    );
    for k in 0..N {
        let want = masked(&in_l, |i| tangents[k][i], |_| PAD_DY);
        assert_eq!(
            bits(&dys[k].read(s)),
            bits(&want),
            "forward tangent in dy's box, padding untouched (lane {k}), {what}"
        );
        let mut want = marks[k].clone();
        for (ai, li) in c.pairs() {
            want[ai] = tangents[k][li];
        }
        assert_eq!(
            bits(&das[k].to_host(s).unwrap()),
            bits(&want),
            "forward tangent in the array shadow's box, other elements untouched (lane {k}), {what}"
        );
        assert_eq!(
            bits(&dxs[k].read(s)),
            bits(&tangents[k]),
            "the source tangent is only read (lane {k}), {what}"
        );
    }
}

fn round_trips_of_kind<L: Kind>() {
    let s = gpu();
    for c in boxes() {
        box_round_trip::<L, 1>(&s, c);
        box_round_trip::<L, 3>(&s, c);
    }
}

/// The seed's round trip through boxes of arrays with the linear side in pinned host memory
/// (`alloc_pinned`): `dx == 2x` exactly, forward and reverse, widths 1 and 3.
#[test]
#[ignore = "needs a GPU"]
fn seed_round_trip_pinned_through_array_boxes() {
    round_trips_of_kind::<PinnedHostSlice<f32>>();
}

/// The same with the linear side in unified memory (`alloc_unified`).
#[test]
#[ignore = "needs a GPU"]
fn seed_round_trip_unified_through_array_boxes() {
    round_trips_of_kind::<UnifiedSlice<f32>>();
}

/// The same with the linear side in pageable host memory.
#[test]
#[ignore = "needs a GPU"]
fn seed_round_trip_pageable_through_array_boxes() {
    round_trips_of_kind::<Vec<f32>>();
}

/// The same with the linear side in device memory.
#[test]
#[ignore = "needs a GPU"]
fn seed_round_trip_device_through_array_boxes() {
    round_trips_of_kind::<CudaSlice<f32>>();
}

// ---- restore ------------------------------------------------------------------------------------

/// `to_array` with `restore`: the augmented primal writes the box (and saves the old one), the
/// reverse accumulates `dx += d_array[box]`, zeroes the shadow's box and writes the array's old
/// box back: the whole array reads back bit for bit as before the copy.
fn restore_of_a_box<L: Kind, const N: usize>(s: &Arc<CudaStream>, c: Case) {
    let (w, h, d) = c.shape;
    let (x0, y0, z0) = c.at;
    let lp = c.pitch * 4;
    let (an, ln) = (c.array_len(), c.linear_len());
    let (in_a, in_l) = (c.in_array_box(), c.in_linear_box());
    let what = format!("{} memory, width {N}, {c:?}", L::NAME);
    let xv = vals(ln, 71);
    let xh = masked(&in_l, |i| xv[i], |_| PAD_X);
    let old = vals(an, 72);
    let x = L::make(s, &xh);
    let mut arr = array_from(s, c.ext, &old);
    let marks: Vec<Vec<f32>> = (0..N).map(|k| vals(an, 73 + k as u64)).collect();
    let mut das: Vec<_> = marks.iter().map(|m| array_from(s, c.ext, m)).collect();
    let dx0 = masked(&in_l, |_| 0.0, |_| PAD_X);
    let mut dxs: Vec<L> = (0..N).map(|_| L::make(s, &dx0)).collect();
    let t = to_array_restoring_rule(s, x0, y0, z0, lp, c.rows, w, h, d)
        .augmented_primal(
            Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
            Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        )
        .unwrap();
    assert!(t.restores(), "the tape keeps the old box, {what}");
    let mid = arr.to_host(s).unwrap();
    for (ai, li) in c.pairs() {
        assert_eq!(mid[ai], xh[li], "the primal box written, {what}");
    }
    assert_ne!(bits(&mid), bits(&old), "the copy changed the array, {what}");
    to_array_restoring_rule(s, x0, y0, z0, lp, c.rows, w, h, d)
        .reverse(
            t,
            Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
            Duplicated::batch(&x, lanes::<_, N>(&mut dxs)),
        )
        .unwrap();
    assert_eq!(
        bits(&arr.to_host(s).unwrap()),
        bits(&old),
        "the old array restored bit for bit, {what}"
    );
    for k in 0..N {
        let mut want_dx = dx0.clone();
        for (ai, li) in c.pairs() {
            want_dx[li] = marks[k][ai];
        }
        assert_eq!(
            bits(&dxs[k].read(s)),
            bits(&want_dx),
            "dx += d_array[box] (lane {k}), {what}"
        );
        let want = masked(&in_a, |_| 0.0, |i| marks[k][i]);
        assert_eq!(
            bits(&das[k].to_host(s).unwrap()),
            bits(&want),
            "the array shadow's box +0.0, other elements untouched (lane {k}), {what}"
        );
    }
}

#[test]
#[ignore = "needs a GPU"]
fn restore_writes_the_old_array_box_back() {
    let s = gpu();
    for c in boxes() {
        restore_of_a_box::<CudaSlice<f32>, 1>(&s, c);
        restore_of_a_box::<PinnedHostSlice<f32>, 3>(&s, c);
        restore_of_a_box::<Vec<f32>, 1>(&s, c);
    }
}

// ---- memset and fill with an array destination ------------------------------------------------

/// Rows of an array: extent, origin `(x, y)`, `(width, height)` (in the first slice of a 3-D
/// array).
/// (extent, origin, (width, height)).
type Rows = ((usize, usize, usize), (usize, usize), (usize, usize));

const ROWS: &[Rows] = &[
    ((40, 1, 1), (5, 0), (17, 1)),
    ((13, 9, 1), (3, 2), (7, 5)),
    ((9, 7, 3), (2, 5), (4, 2)),
];

fn rows_mask(ext: (usize, usize, usize), at: (usize, usize), (w, h): (usize, usize)) -> Vec<bool> {
    let n = ext.0 * ext.1 * ext.2;
    (0..n)
        .map(|i| {
            let (x, y, z) = (i % ext.0, (i / ext.0) % ext.1, i / (ext.0 * ext.1));
            z == 0 && (at.0..at.0 + w).contains(&x) && (at.1..at.1 + h).contains(&y)
        })
        .collect()
}

/// Marks for a shadow: multiples of 1/64, every fifth one `-0.0` (a zero whose sign bit a
/// zeroing must clear).
fn marks(n: usize, seed: u64) -> Vec<f32> {
    let mut v = vals(n, seed);
    for x in v.iter_mut().step_by(5) {
        *x = -0.0;
    }
    v
}

fn memset_rows<const N: usize>(s: &Arc<CudaStream>) {
    for &(ext, at, (w, h)) in ROWS {
        let n = ext.0 * ext.1 * ext.2;
        let inside = rows_mask(ext, at, (w, h));
        let what = format!("{ext:?} at {at:?}, {w} × {h}, width {N}");
        let old = vals(n, 81);
        let ms: Vec<Vec<f32>> = (0..N).map(|k| marks(n, 82 + k as u64)).collect();
        let want_arr = masked(&inside, |_| 0.0, |i| old[i]);
        // Forward: the primal box and each tangent's box ← +0.0.
        let mut arr = array_from(s, ext, &old);
        let mut das: Vec<_> = ms.iter().map(|m| array_from(s, ext, m)).collect();
        zero_array_rows_rule(s, at.0, at.1, w, h)
            .forward(Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)))
            .unwrap();
        assert_eq!(
            bits(&arr.to_host(s).unwrap()),
            bits(&want_arr),
            "primal, {what}"
        );
        for k in 0..N {
            let want = masked(&inside, |_| 0.0, |i| ms[k][i]);
            assert_eq!(
                bits(&das[k].to_host(s).unwrap()),
                bits(&want),
                "forward: tangent box +0.0, the rest untouched (lane {k}), {what}"
            );
        }
        // Reverse: each shadow's box ← +0.0.
        let mut arr = array_from(s, ext, &old);
        let mut das: Vec<_> = ms.iter().map(|m| array_from(s, ext, m)).collect();
        let t = zero_array_rows_rule(s, at.0, at.1, w, h)
            .augmented_primal(Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)))
            .unwrap();
        assert_eq!(
            bits(&arr.to_host(s).unwrap()),
            bits(&want_arr),
            "primal, {what}"
        );
        zero_array_rows_rule(s, at.0, at.1, w, h)
            .reverse(t, Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)))
            .unwrap();
        for k in 0..N {
            let want = masked(&inside, |_| 0.0, |i| ms[k][i]);
            assert_eq!(
                bits(&das[k].to_host(s).unwrap()),
                bits(&want),
                "reverse: shadow box +0.0, the rest untouched (lane {k}), {what}"
            );
        }
        // Rows past the array's last column: refused before anything is written.
        let mut arr = array_from(s, ext, &old);
        let mut das: Vec<_> = ms.iter().map(|m| array_from(s, ext, m)).collect();
        let e = zero_array_rows_rule(s, ext.0 - 2, at.1, 3, h)
            .forward(Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)));
        assert!(
            matches!(e, Err(rules_runtime::Error::BadRegion { .. })),
            "{e:?}, {what}"
        );
        assert_eq!(
            bits(&arr.to_host(s).unwrap()),
            bits(&old),
            "nothing written, {what}"
        );
        for k in 0..N {
            assert_eq!(
                bits(&das[k].to_host(s).unwrap()),
                bits(&ms[k]),
                "no shadow written (lane {k}), {what}"
            );
        }
    }
}

/// A `memset` rule on rows of an array (placed by `#[dst_x]`, `#[dst_y]`): forward and reverse
/// zero the shadows' boxes to `+0.0` (marks with the sign bit set included) and nothing else,
/// widths 1 and 3; rows past the array are refused before anything is written. A `memset` of a
/// whole 3-D array zeroes every element of the primal and of each shadow.
#[test]
#[ignore = "needs a GPU"]
fn memset_of_an_array() {
    let s = gpu();
    memset_rows::<1>(&s);
    memset_rows::<3>(&s);
    let ext = (9, 7, 3);
    let n = ext.0 * ext.1 * ext.2;
    let mut arr = array_from(&s, ext, &vals(n, 91));
    let mut das: Vec<_> = (0..3)
        .map(|k| array_from(&s, ext, &marks(n, 92 + k)))
        .collect();
    zero_array_rule(&s)
        .forward(Duplicated::batch(&mut arr, lanes::<_, 3>(&mut das)))
        .unwrap();
    assert!(all_zero(&s, &arr), "whole primal +0.0");
    for (k, da) in das.iter().enumerate() {
        assert!(all_zero(&s, da), "whole tangent +0.0 (lane {k})");
    }
    let mut arr = array_from(&s, ext, &vals(n, 91));
    let mut das: Vec<_> = (0..3)
        .map(|k| array_from(&s, ext, &marks(n, 95 + k)))
        .collect();
    let t = zero_array_rule(&s)
        .augmented_primal(Duplicated::batch(&mut arr, lanes::<_, 3>(&mut das)))
        .unwrap();
    zero_array_rule(&s)
        .reverse(t, Duplicated::batch(&mut arr, lanes::<_, 3>(&mut das)))
        .unwrap();
    assert!(all_zero(&s, &arr), "whole primal +0.0");
    for (k, da) in das.iter().enumerate() {
        assert!(
            all_zero(&s, da),
            "whole shadow +0.0 after the reverse (lane {k})"
        );
    }
}

fn fill_rows<const N: usize>(s: &Arc<CudaStream>) {
    let v = 1.25f32;
    for &(ext, at, (w, h)) in ROWS {
        let n = ext.0 * ext.1 * ext.2;
        let inside = rows_mask(ext, at, (w, h));
        let what = format!("{ext:?} at {at:?}, {w} × {h}, width {N}");
        let old = vals(n, 101);
        let ms: Vec<Vec<f32>> = (0..N).map(|k| marks(n, 102 + k as u64)).collect();
        let want_arr = masked(&inside, |_| v, |i| old[i]);
        let dv: [f32; N] = core::array::from_fn(|k| 0.5 - k as f32 / 8.0);
        // Forward, a `Dual` value: the tangent's box ← d_v.
        let mut arr = array_from(s, ext, &old);
        let mut das: Vec<_> = ms.iter().map(|m| array_from(s, ext, m)).collect();
        fill_array_rows_rule(s, at.0, at.1, w, h)
            .forward(
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                Dual::batch(v, dv),
            )
            .unwrap();
        assert_eq!(
            bits(&arr.to_host(s).unwrap()),
            bits(&want_arr),
            "primal, {what}"
        );
        for k in 0..N {
            let want = masked(&inside, |_| dv[k], |i| ms[k][i]);
            assert_eq!(
                bits(&das[k].to_host(s).unwrap()),
                bits(&want),
                "forward: tangent box == d_v, the rest untouched (lane {k}), {what}"
            );
        }
        // Forward, a `Const` value: the tangent's box ← +0.0.
        let mut arr = array_from(s, ext, &old);
        let mut das: Vec<_> = ms.iter().map(|m| array_from(s, ext, m)).collect();
        fill_array_rows_rule(s, at.0, at.1, w, h)
            .forward(
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                Const(v),
            )
            .unwrap();
        assert_eq!(
            bits(&arr.to_host(s).unwrap()),
            bits(&want_arr),
            "primal, {what}"
        );
        for k in 0..N {
            let want = masked(&inside, |_| 0.0, |i| ms[k][i]);
            assert_eq!(
                bits(&das[k].to_host(s).unwrap()),
                bits(&want),
                "forward, Const value: tangent box +0.0 (lane {k}), {what}"
            );
        }
        // Reverse, an `Active` value: d_v = Σ_box d_array (exact: multiples of 1/64), then the
        // shadow's box ← +0.0.
        let mut arr = array_from(s, ext, &old);
        let mut das: Vec<_> = ms.iter().map(|m| array_from(s, ext, m)).collect();
        let t = fill_array_rows_rule(s, at.0, at.1, w, h)
            .augmented_primal(
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                Active(v),
            )
            .unwrap();
        assert_eq!(
            bits(&arr.to_host(s).unwrap()),
            bits(&want_arr),
            "primal, {what}"
        );
        let got = fill_array_rows_rule(s, at.0, at.1, w, h)
            .reverse(
                t,
                Duplicated::batch(&mut arr, lanes::<_, N>(&mut das)),
                Active(v),
            )
            .unwrap();
        for k in 0..N {
            let sum: f64 = (0..n)
                .filter(|&i| inside[i])
                .map(|i| f64::from(ms[k][i]))
                .sum();
            assert_eq!(
                f64::from(got[k]),
                sum,
                "d_v = Σ_box d_array (lane {k}), {what}"
            );
            let want = masked(&inside, |_| 0.0, |i| ms[k][i]);
            assert_eq!(
                bits(&das[k].to_host(s).unwrap()),
                bits(&want),
                "reverse: shadow box +0.0, the rest untouched (lane {k}), {what}"
            );
        }
    }
}

/// A `fill` rule on rows of an array: forward with a `Dual` value (tangent box ← d_v) and a
/// `Const` one (← +0.0), reverse with an `Active` value (d_v = Σ_box d_array exactly, then the
/// box ← +0.0), widths 1 and 3, nothing outside the rows touched; a fill of a whole 3-D array.
#[test]
#[ignore = "needs a GPU"]
fn fill_of_an_array() {
    let s = gpu();
    fill_rows::<1>(&s);
    fill_rows::<3>(&s);
    let ext = (9, 7, 3);
    let n = ext.0 * ext.1 * ext.2;
    let ms: Vec<Vec<f32>> = (0..3).map(|k| marks(n, 111 + k)).collect();
    let mut arr = array_from(&s, ext, &vals(n, 110));
    let mut das: Vec<_> = ms.iter().map(|m| array_from(&s, ext, m)).collect();
    fill_array_rule(&s)
        .forward(
            Duplicated::batch(&mut arr, lanes::<_, 3>(&mut das)),
            Dual::batch(-0.75, [0.25, -1.5, 2.0]),
        )
        .unwrap();
    assert!(arr.to_host(&s).unwrap().iter().all(|&x| x == -0.75));
    for (k, t) in [0.25f32, -1.5, 2.0].into_iter().enumerate() {
        assert!(
            das[k].to_host(&s).unwrap().iter().all(|&x| x == t),
            "whole tangent == d_v (lane {k})"
        );
    }
    let mut das: Vec<_> = ms.iter().map(|m| array_from(&s, ext, m)).collect();
    let t = fill_array_rule(&s)
        .augmented_primal(
            Duplicated::batch(&mut arr, lanes::<_, 3>(&mut das)),
            Active(-0.75),
        )
        .unwrap();
    let got = fill_array_rule(&s)
        .reverse(
            t,
            Duplicated::batch(&mut arr, lanes::<_, 3>(&mut das)),
            Active(-0.75),
        )
        .unwrap();
    for k in 0..3 {
        let sum: f64 = ms[k].iter().map(|&x| f64::from(x)).sum();
        assert_eq!(f64::from(got[k]), sum, "d_v = Σ d_array (lane {k})");
        assert!(all_zero(&s, &das[k]), "whole shadow +0.0 (lane {k})");
    }
}

// ---- array → array at width 3 -------------------------------------------------------------------

/// A box of one array into a box of another, odd offsets on both sides, width 3: forward puts
/// each lane's source tangent box into its destination tangent box; reverse adds each lane's
/// destination shadow box into its source shadow box and zeroes the former to `+0.0`; nothing
/// outside the boxes moves.
fn array_to_array_lanes(
    s: &Arc<CudaStream>,
    (sext, sat): ((usize, usize, usize), (usize, usize, usize)),
    (dext, dat): ((usize, usize, usize), (usize, usize, usize)),
    shape: (usize, usize, usize),
) {
    const N: usize = 3;
    let what = format!("{sext:?} at {sat:?} → {dext:?} at {dat:?}, {shape:?}");
    let idx = |(w, h, _): (usize, usize, usize), (x0, y0, z0): (usize, usize, usize), x, y, z| {
        (x0 + x) + w * ((y0 + y) + h * (z0 + z))
    };
    let pairs: Vec<(usize, usize)> = (0..shape.2)
        .flat_map(|z| (0..shape.1).flat_map(move |y| (0..shape.0).map(move |x| (x, y, z))))
        .map(|(x, y, z)| (idx(dext, dat, x, y, z), idx(sext, sat, x, y, z)))
        .collect();
    let (dn, sn) = (dext.0 * dext.1 * dext.2, sext.0 * sext.1 * sext.2);
    let (w, h, d) = shape;
    let src_vals = vals(sn, 121);
    let src = array_from(s, sext, &src_vals);
    let old = vals(dn, 122);
    let mut want_dst = old.clone();
    for &(di, si) in &pairs {
        want_dst[di] = src_vals[si];
    }
    let svs: Vec<Vec<f32>> = (0..N).map(|k| marks(sn, 123 + k as u64)).collect();
    let dvs: Vec<Vec<f32>> = (0..N).map(|k| marks(dn, 130 + k as u64)).collect();
    // Forward.
    let mut dst = array_from(s, dext, &old);
    let mut ddst: Vec<_> = dvs.iter().map(|m| array_from(s, dext, m)).collect();
    let mut dsrc: Vec<_> = svs.iter().map(|m| array_from(s, sext, m)).collect();
    array_to_array_rule(s, dat.0, dat.1, dat.2, sat.0, sat.1, sat.2, w, h, d)
        .forward(
            Duplicated::batch(&mut dst, lanes::<_, N>(&mut ddst)),
            Duplicated::batch(&src, lanes::<_, N>(&mut dsrc)),
        )
        .unwrap();
    assert_eq!(
        bits(&dst.to_host(s).unwrap()),
        bits(&want_dst),
        "primal, {what}"
    );
    for k in 0..N {
        let mut want = dvs[k].clone();
        for &(di, si) in &pairs {
            want[di] = svs[k][si];
        }
        assert_eq!(
            bits(&ddst[k].to_host(s).unwrap()),
            bits(&want),
            "forward tangent (lane {k}), {what}"
        );
        assert_eq!(
            bits(&dsrc[k].to_host(s).unwrap()),
            bits(&svs[k]),
            "the source tangent only read (lane {k}), {what}"
        );
    }
    // Reverse.
    let mut dst = array_from(s, dext, &old);
    let mut ddst: Vec<_> = dvs.iter().map(|m| array_from(s, dext, m)).collect();
    let mut dsrc: Vec<_> = svs.iter().map(|m| array_from(s, sext, m)).collect();
    let t = array_to_array_rule(s, dat.0, dat.1, dat.2, sat.0, sat.1, sat.2, w, h, d)
        .augmented_primal(
            Duplicated::batch(&mut dst, lanes::<_, N>(&mut ddst)),
            Duplicated::batch(&src, lanes::<_, N>(&mut dsrc)),
        )
        .unwrap();
    array_to_array_rule(s, dat.0, dat.1, dat.2, sat.0, sat.1, sat.2, w, h, d)
        .reverse(
            t,
            Duplicated::batch(&mut dst, lanes::<_, N>(&mut ddst)),
            Duplicated::batch(&src, lanes::<_, N>(&mut dsrc)),
        )
        .unwrap();
    assert_eq!(
        bits(&dst.to_host(s).unwrap()),
        bits(&want_dst),
        "primal, {what}"
    );
    for k in 0..N {
        let mut want_s = svs[k].clone();
        let mut want_d = dvs[k].clone();
        for &(di, si) in &pairs {
            want_s[si] = svs[k][si] + dvs[k][di];
            want_d[di] = 0.0;
        }
        assert_eq!(
            bits(&dsrc[k].to_host(s).unwrap()),
            bits(&want_s),
            "d_src[box] += d_dst[box], the rest untouched (lane {k}), {what}"
        );
        assert_eq!(
            bits(&ddst[k].to_host(s).unwrap()),
            bits(&want_d),
            "d_dst[box] ← +0.0, the rest untouched (lane {k}), {what}"
        );
    }
}

/// Array → array at width 3 with odd offsets: 2-D into 2-D, a 1-D run into a row of a 2-D
/// array, and a 3-D box into a 3-D array.
#[test]
#[ignore = "needs a GPU"]
fn array_to_array_odd_offsets_width_3() {
    let s = gpu();
    array_to_array_lanes(
        &s,
        ((17, 11, 1), (5, 3, 0)),
        ((13, 9, 1), (1, 4, 0)),
        (7, 5, 1),
    );
    array_to_array_lanes(
        &s,
        ((41, 1, 1), (3, 0, 0)),
        ((15, 6, 1), (5, 5, 0)),
        (9, 1, 1),
    );
    array_to_array_lanes(
        &s,
        ((9, 7, 5), (1, 3, 1)),
        ((7, 9, 6), (2, 1, 3)),
        (5, 3, 3),
    );
}

/// The ready-made array copies refuse a capturing stream (the events they record there would not
/// mark the copy, which runs when the graph is launched, maybe after the arrays are gone), with
/// `Error::Capturing`, before anything is enqueued; the capture then ends empty.
#[test]
#[ignore = "needs a GPU"]
fn ready_made_array_copies_refuse_a_capturing_stream() {
    // A capture of its own process (see `alone`).
    alone("ready_made_array_copies_refuse_a_capturing_stream", || {
        use rules_runtime::cudarc::driver::sys;
        use rules_tests::arrays::{array_to_array, from_array, to_array};
        let s = gpu();
        let ext = (64, 4, 1);
        let n = ext.0 * ext.1;
        let old = vals(n, 71);
        let mut a = array_from(&s, ext, &old);
        let b = array_from(&s, ext, &vals(n, 72));
        let dev = s.clone_htod(&vals(n, 73)).unwrap();
        let mut back = s.alloc_zeros::<f32>(n).unwrap();
        s.synchronize().unwrap();
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .unwrap();
        let shape = (ext.0, ext.1, 1);
        let r1 = array_to_array(&s, &mut a, 0, 0, 0, &b, 0, 0, 0, shape.0, shape.1, shape.2);
        let r2 = to_array(&s, &mut a, 0, 0, 0, &dev, 256, 4, shape.0, shape.1, shape.2);
        let r3 = from_array(
            &s, &mut back, 256, 4, &a, 0, 0, 0, shape.0, shape.1, shape.2,
        );
        let graph = s.end_capture(sys::CUgraphInstantiate_flags(0)).unwrap();
        for (r, what) in [(r1, "array_to_array"), (r2, "to_array"), (r3, "from_array")] {
            assert!(
                matches!(r, Err(rules_runtime::Error::Capturing { .. })),
                "{what}: {r:?}"
            );
        }
        drop(graph);
        assert_eq!(a.to_host(&s).unwrap(), old, "the array is unchanged");
        assert_eq!(s.clone_dtoh(&back).unwrap(), vec![0.0; n]);
    });
}
