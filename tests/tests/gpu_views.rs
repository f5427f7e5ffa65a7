//! GPU suite: read-only views as sources. cudarc's own copies take a `&CudaView` for a source, so
//! rules written on cudarc's signatures take one too: its primal is only read, and its shadows
//! are writable cudarc buffers (`&mut CudaViewMut` or `&mut CudaSlice`). The forward copies such
//! a tangent with the runtime (the primitive takes a `&CudaView`, not the shadow's type); the
//! reverse accumulates into it. Values are multiples of 1/4, so every expected gradient is exact.
//!
//! Every test here is `#[ignore]`d so that a machine without a GPU reports it as *ignored*
//! (skipped), never as passed. On a GPU machine run `cargo test -- --include-ignored`; there, a
//! missing driver or device is a failure, not a skip (`single_rank_*` also needs NCCL).

use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr, DriverError,
};
use rules_runtime::nccl::{self, Comm};
use rules_runtime::prelude::*;
use rules_runtime::{CollectiveRule, Differentiable, Error};
use rules_tests::upload_rule;
use std::sync::Arc;

// ---- Primitives, on cudarc's own signatures -------------------------------------------------

/// `memcpy_dtod` between views.
#[derivative_rule(copy)]
fn dtod(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaViewMut<'_, f32>,
    #[src] src: &CudaView<'_, f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// `memcpy_dtod` from a view into a whole buffer, for every element type.
#[derivative_rule(copy)]
fn dtod_into<T: Differentiable + DeviceRepr>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<T>,
    #[src] src: &CudaView<'_, T>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

/// `memcpy_dtoh` from a view: the seed's download.
#[derivative_rule(copy)]
fn dtoh(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut [f32],
    #[src] src: &CudaView<'_, f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtoh(src, dst)
}

/// A pitched copy from a view, row by row.
#[derivative_rule(copy2d)]
fn rows_from_view(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaView<'_, f32>,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) -> Result<(), DriverError> {
    for r in 0..height {
        let (d, s) = (r * dpitch / 4, r * spitch / 4);
        stream.memcpy_dtod(&src.slice(s..s + width), &mut dst.slice_mut(d..d + width))?;
    }
    Ok(())
}

/// A fill of all of `dst` from a value held in a one-element view.
#[derivative_rule(fill)]
fn fill_from_view(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: &CudaView<'_, f32>,
) -> Result<(), DriverError> {
    for e in 0..dst.len() {
        stream.memcpy_dtod(v, &mut dst.slice_mut(e..e + 1))?;
    }
    Ok(())
}

/// An all-reduce whose input is a view.
#[derivative_rule(all_reduce)]
fn sum_from_view(
    comm: &Comm,
    #[src] x: &CudaView<'_, f32>,
    #[dst] y: &mut CudaSlice<f32>,
) -> rules_runtime::Result<()> {
    let sum = rules_runtime::cudarc::nccl::ReduceOp::Sum;
    nccl::checked("all_reduce", comm.all_reduce(x, y, &sum))
}

// ---- Helpers ----------------------------------------------------------------------------------

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

fn dev<T: DeviceRepr>(s: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    s.clone_htod(v).unwrap()
}

fn host<T: DeviceRepr + Default + Clone>(b: &CudaSlice<T>) -> Vec<T> {
    let s = b.stream();
    let mut out = vec![T::default(); b.len()];
    s.memcpy_dtoh(b, &mut out[..]).unwrap();
    s.synchronize().unwrap();
    out
}

/// `v` with `w[i]` added at `at + i`.
fn plus_at(v: &[f32], at: usize, w: &[f32]) -> Vec<f32> {
    let mut out = v.to_vec();
    for (i, x) in w.iter().enumerate() {
        out[at + i] += x;
    }
    out
}

// ---- Tests ------------------------------------------------------------------------------------

/// `dst[2..6] ← x[1..5]` between views of larger buffers, the shadows `CudaViewMut`s of theirs:
/// forward `dy ← dx`, reverse `dx += dy; dy ← 0`, and nothing outside the views touched.
#[test]
#[ignore = "needs a CUDA GPU"]
fn dtod_from_a_read_only_view_forward_and_reverse() {
    let s = gpu();
    let x = dev(&s, &[0.0f32, 1.0, -2.0, 3.5, 0.25, 9.0]);
    let dx0 = [7.0f32, 0.5, -0.25, 2.0, 4.0, 7.0];
    let mut dx = dev(&s, &dx0);
    let (mut y, mut dy) = (dev(&s, &[0.0f32; 6]), dev(&s, &[9.0f32; 6]));
    {
        let (xv, mut dxv) = (x.slice(1..5), dx.slice_mut(1..5));
        let (mut yv, mut dyv) = (y.slice_mut(2..6), dy.slice_mut(2..6));
        dtod_rule(&s)
            .forward(
                Duplicated::new(&mut yv, &mut dyv),
                Duplicated::new(&xv, &mut dxv),
            )
            .unwrap();
    }
    assert_eq!(host(&y), [0.0, 0.0, 1.0, -2.0, 3.5, 0.25]);
    assert_eq!(
        host(&dy),
        [9.0, 9.0, 0.5, -0.25, 2.0, 4.0],
        "dy ← dx, exactly"
    );
    assert_eq!(host(&dx), dx0, "the source's shadow is only read");

    let seed = [1.0f32, -0.5, 0.75, 8.0];
    let mut dy = dev(&s, &[3.0, 3.0, seed[0], seed[1], seed[2], seed[3]]);
    {
        let (xv, mut dxv) = (x.slice(1..5), dx.slice_mut(1..5));
        let (mut yv, mut dyv) = (y.slice_mut(2..6), dy.slice_mut(2..6));
        let mut rule = dtod_rule(&s);
        let tape = rule
            .augmented_primal(Duplicated::new(&mut yv, &mut dyv), Const(&xv))
            .unwrap();
        rule.reverse(
            tape,
            Duplicated::new(&mut yv, &mut dyv),
            Duplicated::new(&xv, &mut dxv),
        )
        .unwrap();
    }
    assert_eq!(host(&dx), plus_at(&dx0, 1, &seed), "dx += dy, exactly");
    assert_eq!(host(&dy), [3.0, 3.0, 0.0, 0.0, 0.0, 0.0], "dy ← 0");
}

/// The ready-made rule for cudarc's `memcpy_dtod`, from a view as cudarc takes it: forward
/// `dy ← dx`, reverse `dx += dy; dy ← 0`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn ready_made_dtod_from_a_read_only_view() {
    use rules_runtime::cudarc_rules::memcpy_dtod_rule;
    let s = gpu();
    let x = dev(&s, &[1.0f32, 2.0, 3.0, 4.0]);
    let dx0 = [0.0f32, 0.5, -0.75, 0.0];
    let mut dx = dev(&s, &dx0);
    let (mut y, mut dy) = (dev(&s, &[0.0f32; 2]), dev(&s, &[9.0f32; 2]));
    let xv = x.slice(1..3);
    let mut dxv = dx.slice_mut(1..3);
    memcpy_dtod_rule(&s)
        .forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&xv, &mut dxv),
        )
        .unwrap();
    assert_eq!((host(&y), host(&dy)), (vec![2.0, 3.0], vec![0.5, -0.75]));
    let tape = memcpy_dtod_rule(&s)
        .augmented_primal(Duplicated::new(&mut y, &mut dy), Const(&xv))
        .unwrap();
    memcpy_dtod_rule(&s)
        .reverse(
            tape,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&xv, &mut dxv),
        )
        .unwrap();
    assert_eq!(host(&dx), [0.0, 1.0, -1.5, 0.0], "dx += dy (which held dx)");
    assert_eq!(host(&dy), [0.0; 2]);
}

/// A batch of three `CudaSlice` shadows of a view, into a whole buffer, in f64 and bf16.
fn batch_into_whole_buffer<T: Differentiable + DeviceRepr + Default>(s: &Arc<CudaStream>) {
    let v = |xs: &[f64]| -> Vec<T> { rules_tests::vals(xs) };
    let x = dev(s, &v(&[5.0, 1.0, 2.0, 3.0]));
    let dx0 = [
        v(&[1.0, 2.0, 3.0]),
        v(&[-1.0, 0.5, 0.25]),
        v(&[4.0, 0.0, -8.0]),
    ];
    let mut dx = dx0.each_ref().map(|d| dev(s, d));
    let mut y = dev(s, &v(&[0.0; 3]));
    let mut dy = [0, 1, 2].map(|_| dev(s, &v(&[9.0; 3])));
    let xv = x.slice(1..4);
    let [d0, d1, d2] = &mut dy;
    let [e0, e1, e2] = &mut dx;
    dtod_into_rule(s)
        .forward(
            Duplicated::batch(&mut y, [&mut *d0, &mut *d1, &mut *d2]),
            Duplicated::batch(&xv, [&mut *e0, &mut *e1, &mut *e2]),
        )
        .unwrap();
    assert_eq!(host(&y), v(&[1.0, 2.0, 3.0]));
    for k in 0..3 {
        assert_eq!(host(&dy[k]), dx0[k], "lane {k}: dy ← dx");
    }
    let mut rule = dtod_into_rule(s);
    let [d0, d1, d2] = &mut dy;
    let tape = rule
        .augmented_primal(
            Duplicated::batch(&mut y, [&mut *d0, &mut *d1, &mut *d2]),
            Const(&xv),
        )
        .unwrap();
    let [e0, e1, e2] = &mut dx;
    rule.reverse(
        tape,
        Duplicated::batch(&mut y, [&mut *d0, &mut *d1, &mut *d2]),
        DuplicatedOnly::batch(&xv, [&mut *e0, &mut *e1, &mut *e2]),
    )
    .unwrap();
    for k in 0..3 {
        let twice: Vec<T> = dx0[k].iter().map(|a| T::add(*a, *a)).collect();
        assert_eq!(host(&dx[k]), twice, "lane {k}: dx += dy (dy held dx)");
        assert_eq!(host(&dy[k]), v(&[0.0; 3]), "lane {k}: dy ← 0");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_batch_of_slice_shadows_of_a_view_in_f64_and_bf16() {
    let s = gpu();
    batch_into_whole_buffer::<f64>(&s);
    batch_into_whole_buffer::<half::bf16>(&s);
}

/// The seed, `f(x) = sum(abs2, to_host(to_device(x)))`, downloaded from a read-only view of the
/// device buffer: `dx == 2x` exactly, forward and reverse.
#[test]
#[ignore = "needs a CUDA GPU"]
fn seed_round_trip_through_a_read_only_view() {
    let s = gpu();
    let x = [1.0f32, 2.0, 3.0];
    let (mut mid, mut dmid) = (dev(&s, &[0.0f32; 3]), dev(&s, &[0.0f32; 3]));
    let (mut y, mut dy, mut dx) = ([0.0f32; 3], [0.0f32; 3], [0.0f32; 3]);
    let t1 = upload_rule(&s)
        .augmented_primal(
            Duplicated::new(&mut mid, &mut dmid),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    let t2 = dtoh_rule(&s)
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&mid.as_view(), &mut dmid.as_view_mut()),
        )
        .unwrap();
    assert_eq!(y, x);
    dy = y.map(|v| 2.0 * v); // d(Σ y²)/dy
    dtoh_rule(&s)
        .reverse(
            t2,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&mid.as_view(), &mut dmid.as_view_mut()),
        )
        .unwrap();
    upload_rule(&s)
        .reverse(
            t1,
            Duplicated::new(&mut mid, &mut dmid),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(dx, [2.0, 4.0, 6.0], "dx == 2x");
    assert_eq!((dy, host(&dmid)), ([0.0; 3], vec![0.0; 3]));

    // Forward: the tangent 2x reaches y's tangent through the view's `CudaViewMut` shadow.
    let (mut dx, mut dy) = ([2.0f32, 4.0, 6.0], [0.0f32; 3]);
    upload_rule(&s)
        .forward(
            Duplicated::new(&mut mid, &mut dmid),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    dtoh_rule(&s)
        .forward(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&mid.as_view(), &mut dmid.as_view_mut()),
        )
        .unwrap();
    s.synchronize().unwrap();
    assert_eq!(dy, [2.0, 4.0, 6.0]);
}

/// A 2 × 3 box from a view (pitch 4) into a buffer (pitch 5): forward copies the box's tangent,
/// reverse accumulates it back; the padding of every buffer keeps its sentinel.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pitched_copy_from_a_read_only_view() {
    let s = gpu();
    let (w, h, sp, dp) = (2usize, 3usize, 4usize, 5usize);
    let src_box = |i: usize| i % sp < w && i / sp < h;
    let dst_box = |i: usize| i % dp < w && i / dp < h;
    let xs: Vec<f32> = (0..sp * h).map(|i| i as f32 / 4.0).collect();
    let dx0: Vec<f32> = (0..sp * h).map(|i| 1.0 - i as f32 / 2.0).collect();
    let x = dev(&s, &xs);
    let mut dx = dev(&s, &dx0);
    let (mut y, mut dy) = (dev(&s, &[-1.0f32; 15]), dev(&s, &[-1.0f32; 15]));
    let rule = |s| rows_from_view_rule(s, dp * 4, sp * 4, w, h);
    rule(&s)
        .forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x.as_view(), &mut dx.as_view_mut()),
        )
        .unwrap();
    let (hy, hdy) = (host(&y), host(&dy));
    for i in 0..dp * h {
        let j = (i / dp) * sp + i % dp;
        let (want_y, want_dy) = if dst_box(i) {
            (xs[j], dx0[j])
        } else {
            (-1.0, -1.0)
        };
        assert_eq!((hy[i], hdy[i]), (want_y, want_dy), "element {i}");
    }
    let tape = rule(&s)
        .augmented_primal(Duplicated::new(&mut y, &mut dy), Const(&x.as_view()))
        .unwrap();
    rule(&s)
        .reverse(
            tape,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x.as_view(), &mut dx.as_view_mut()),
        )
        .unwrap();
    let (hdx, hdy) = (host(&dx), host(&dy));
    for i in 0..sp * h {
        let want = if src_box(i) { 2.0 * dx0[i] } else { dx0[i] };
        assert_eq!(hdx[i], want, "dx[{i}] += dy (which held dx)");
    }
    for (i, d) in hdy.iter().enumerate() {
        assert_eq!(*d, if dst_box(i) { 0.0 } else { -1.0 }, "dy[{i}]");
    }
}

/// A fill from a one-element view, its shadow a `CudaViewMut`: forward `dy ← dv`, reverse
/// `dv += Σ dy`, then `dy ← 0`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn fill_from_a_read_only_value_view() {
    let s = gpu();
    let v = dev(&s, &[0.0f32, 2.5]);
    let mut dv = dev(&s, &[8.0f32, -0.75]);
    let (mut y, mut dy) = (dev(&s, &[0.0f32; 4]), dev(&s, &[9.0f32; 4]));
    fill_from_view_rule(&s)
        .forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&v.slice(1..2), &mut dv.slice_mut(1..2)),
        )
        .unwrap();
    assert_eq!((host(&y), host(&dy)), (vec![2.5; 4], vec![-0.75; 4]));

    let tape = fill_from_view_rule(&s)
        .augmented_primal(Duplicated::new(&mut y, &mut dy), Const(&v.slice(1..2)))
        .unwrap();
    let mut dy = dev(&s, &[1.0f32, 2.0, 4.0, 0.5]);
    fill_from_view_rule(&s)
        .reverse(
            tape,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&v.slice(1..2), &mut dv.slice_mut(1..2)),
        )
        .unwrap();
    assert_eq!(host(&dv), [8.0, 6.75], "dv += 7.5");
    assert_eq!(host(&dy), [0.0; 4]);
}

/// A lane whose view shadow is too short is refused before anything is written: neither the
/// primal nor the other lane's tangent.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_bad_view_shadow_changes_nothing() {
    let s = gpu();
    let x = dev(&s, &[1.0f32, 2.0, 3.0]);
    let mut dx = dev(&s, &[4.0f32, 5.0, 6.0]);
    let mut short = dev(&s, &[7.0f32, 8.0]);
    let (mut y, mut dy0, mut dy1) = (
        dev(&s, &[0.0f32; 3]),
        dev(&s, &[9.0f32; 3]),
        dev(&s, &[9.0f32; 3]),
    );
    let e = dtod_into_rule(&s)
        .forward(
            Duplicated::batch(&mut y, [&mut dy0, &mut dy1]),
            Duplicated::batch(&x.as_view(), [&mut dx, &mut short]),
        )
        .unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    assert_eq!(
        (host(&y), host(&dy0)),
        (vec![0.0; 3], vec![9.0; 3]),
        "nothing written"
    );
}

/// An all-reduce on one rank (a local copy through NCCL) whose input is a view: forward
/// `dy ← dx`, reverse `dx += dy; dy ← 0`.
#[test]
#[ignore = "needs a CUDA GPU and NCCL"]
fn single_rank_all_reduce_from_a_read_only_view() {
    let s = gpu();
    let comm = nccl::single_rank(s.clone()).unwrap_or_else(|e| {
        panic!("this test needs NCCL ({e}); put libnccl.so on LD_LIBRARY_PATH")
    });
    let x = dev(&s, &[1.0f32, -2.0, 0.5]);
    let dx0 = [0.25f32, 4.0, -1.0];
    let mut dx = dev(&s, &dx0);
    let (mut y, mut dy) = (dev(&s, &[0.0f32; 3]), dev(&s, &[9.0f32; 3]));
    sum_from_view_rule(&comm)
        .forward(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x.as_view(), &mut dx.as_view_mut()),
        )
        .unwrap();
    assert_eq!((host(&y), host(&dy)), (vec![1.0, -2.0, 0.5], dx0.to_vec()));
    let tape = sum_from_view_rule(&comm)
        .augmented_primal(Duplicated::new(&mut y, &mut dy), Const(&x.as_view()))
        .unwrap();
    sum_from_view_rule(&comm)
        .reverse(
            tape,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x.as_view(), &mut dx),
        )
        .unwrap();
    assert_eq!(host(&dx), [0.5, 8.0, -2.0], "dx += dy (which held dx)");
    assert_eq!(host(&dy), [0.0; 3]);
}
