//! GPU suite for CUDA array memory: shadows in arrays, reached through boxes (staged through
//! pooled linear memory, zeroed by the surface-store kernel or a copy from a zero buffer).
//! `#[ignore]`d: without a GPU they are reported skipped, never passed.

use rules_runtime::cudarc::driver::{CudaStream, DevicePtrMut, PinnedHostSlice, UnifiedSlice};
use rules_runtime::memory::MemoryKind;
use rules_runtime::memory::array::{ArrayElement, CudaArray};
use rules_runtime::memory::raw::RawShadow;
use rules_runtime::{
    Error, On, Pitched, ShadowMemory, accumulate_and_zero_region, accumulate_region,
    accumulate_sum_region, fill_region, restore_region, save_region, sum_region, zero_region,
};
use std::sync::Arc;

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

fn ramp(n: usize, start: f32) -> Vec<f32> {
    (0..n).map(|i| start + (i % 97) as f32 / 32.0).collect()
}

/// The seed's round trip through an array: `x (host) → array → y (host)`, `loss = Σ y²`, so
/// `dx == 2x` exactly, for widths 1 and 3; and the array's shadow reads back all `+0.0`.
#[test]
#[ignore = "needs a GPU"]
fn seed_round_trip_through_an_array() {
    let s = gpu();
    for (w, h, d) in [(1000, 1, 1), (37, 11, 1), (9, 5, 4)] {
        let n = w * h * d;
        let x = ramp(n, 0.5);
        let mut arr = CudaArray::<f32>::new(s.context(), w, h, d).unwrap();
        arr.copy_from_host(&s, &x).unwrap();
        let y = arr.to_host(&s).unwrap();
        assert_eq!(y, x, "the primal round trip");
        let whole = arr.whole();
        // The host side, packed: the same box shape with the array's own pitch.
        let lin = whole;
        for width in [1usize, 3] {
            let mut d_arrays: Vec<_> = (0..width).map(|_| arr.shadow_like(&s).unwrap()).collect();
            let mut dxs = vec![vec![0.0f32; n]; width];
            for (k, (da, dx)) in d_arrays.iter_mut().zip(&mut dxs).enumerate() {
                // Reverse of the download (array → y): d_array += dy; dy ← 0.
                let mut dy: Vec<f32> = y.iter().map(|v| 2.0 * v * (k + 1) as f32).collect();
                accumulate_and_zero_region(On::stream(&s), da, whole, &mut dy, lin).unwrap();
                assert!(dy.iter().all(|&v| v == 0.0));
                // Reverse of the upload (x → array): dx += d_array; d_array ← 0.
                accumulate_and_zero_region(On::stream(&s), dx, lin, da, whole).unwrap();
            }
            for (k, (da, dx)) in d_arrays.iter().zip(&dxs).enumerate() {
                let want: Vec<f32> = x.iter().map(|v| 2.0 * v * (k + 1) as f32).collect();
                assert_eq!(*dx, want, "dx, lane {k}, {w}x{h}x{d}");
                let back = da.to_host(&s).unwrap();
                assert!(
                    back.iter().all(|v| v.to_bits() == 0),
                    "array shadow not +0.0"
                );
            }
        }
    }
}

/// `x (device) → array → device`, with the device side reversed on the stream.
#[test]
#[ignore = "needs a GPU"]
fn device_round_trip_through_an_array() {
    let s = gpu();
    let (w, h) = (300, 7);
    let n = w * h;
    let x = ramp(n, -1.0);
    let arr = CudaArray::<f32>::new(s.context(), w, h, 1).unwrap();
    let whole = arr.whole();
    let lin = whole;
    let mut dy = s
        .clone_htod(&x.iter().map(|v| 2.0 * v).collect::<Vec<_>>())
        .unwrap();
    let mut da = arr.shadow_like(&s).unwrap();
    let mut dx = s.alloc_zeros::<f32>(n).unwrap();
    accumulate_and_zero_region(On::stream(&s), &mut da, whole, &mut dy, lin).unwrap();
    accumulate_and_zero_region(On::stream(&s), &mut dx, lin, &mut da, whole).unwrap();
    let got = s.clone_dtoh(&dx).unwrap();
    assert_eq!(got, x.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
    assert!(s.clone_dtoh(&dy).unwrap().iter().all(|&v| v == 0.0));
    assert!(da.to_host(&s).unwrap().iter().all(|v| v.to_bits() == 0));
}

/// Adjoint identity for boxes smaller than the array, with offsets, 1D/2D/3D, array on either
/// side; every element outside the box reads back untouched.
#[test]
#[ignore = "needs a GPU"]
fn boxes_of_arrays_are_exact_and_touch_nothing_else() {
    let s = gpu();
    let cases = [
        ((64, 1, 1), (5, 0, 0), (40, 1, 1)),
        ((33, 17, 1), (3, 4, 0), (20, 9, 1)),
        ((12, 10, 6), (1, 2, 3), (7, 5, 2)),
    ];
    for ((w, h, d), origin, (bw, bh, bd)) in cases {
        let n = w * h * d;
        let a0 = ramp(n, 3.0);
        let mut arr = CudaArray::<f32>::new(s.context(), w, h, d).unwrap();
        arr.copy_from_host(&s, &a0).unwrap();
        let r = arr.region(origin, (bw, bh, bd));
        // The linear side: a pitched host box with padding.
        let lp = bw + 3;
        let lr = Pitched::slices(2, bw, bh, bd, lp * 4, bh + 1);
        let len = 2 + (bd - 1) * lp * (bh + 1) + (bh - 1) * lp + bw + 1;
        let lin0: Vec<f32> = (0..len).map(|i| -((i % 13) as f32) / 4.0).collect();
        let inside_a: Vec<usize> = (0..bd)
            .flat_map(|z| (0..bh).flat_map(move |y| (0..bw).map(move |x| (x, y, z))))
            .map(|(x, y, z)| (origin.0 + x) + w * ((origin.1 + y) + h * (origin.2 + z)))
            .collect();
        let inside_l: Vec<usize> = (0..bd)
            .flat_map(|z| (0..bh).flat_map(move |y| (0..bw).map(move |x| (x, y, z))))
            .map(|(x, y, z)| 2 + x + lp * y + lp * (bh + 1) * z)
            .collect();
        // array += linear (read).
        let mut lin = lin0.clone();
        accumulate_region(On::stream(&s), &mut arr, r, &lin, lr).unwrap();
        let mut want = a0.clone();
        for (i, j) in inside_a.iter().zip(&inside_l) {
            want[*i] += lin0[*j];
        }
        assert_eq!(arr.to_host(&s).unwrap(), want, "array += host, {w}x{h}x{d}");
        // linear += array, array box ← 0.
        accumulate_and_zero_region(On::stream(&s), &mut lin, lr, &mut arr, r).unwrap();
        let mut want_lin = lin0.clone();
        for (i, j) in inside_a.iter().zip(&inside_l) {
            want_lin[*j] += want[*i];
            want[*i] = 0.0;
        }
        assert_eq!(lin, want_lin, "host += array, {w}x{h}x{d}");
        assert_eq!(
            arr.to_host(&s).unwrap(),
            want,
            "array box zeroed, rest kept"
        );
        // A box crossing the end of a row is refused before anything moves.
        let cross = arr.region((w - 2, 0, 0), (5, 1, 1));
        let e = accumulate_region(
            On::stream(&s),
            &mut arr,
            cross,
            &lin,
            Pitched::linear::<f32>(0, 5),
        )
        .unwrap_err();
        assert!(matches!(e, Error::BadRegion { .. }), "{e}");
        let e = zero_region(On::Host, &mut arr, r).unwrap_err();
        assert!(matches!(e, Error::NoStream(_)), "{e}");
        assert_eq!(arr.to_host(&s).unwrap(), want, "nothing moved");
    }
}

/// Array to array, fills, sums (into the host and into a device value) and restore.
#[test]
#[ignore = "needs a GPU"]
fn arrays_with_arrays_fills_sums_and_restore() {
    let s = gpu();
    let (w, h) = (40, 6);
    let n = w * h;
    let a0 = ramp(n, 1.0);
    let b0 = ramp(n, -2.0);
    let mut a = CudaArray::<f32>::new(s.context(), w, h, 1).unwrap();
    let mut b = CudaArray::<f32>::new(s.context(), w, h, 1).unwrap();
    a.copy_from_host(&s, &a0).unwrap();
    b.copy_from_host(&s, &b0).unwrap();
    let r = a.region((2, 1, 0), (10, 3, 1));
    accumulate_and_zero_region(On::stream(&s), &mut a, r, &mut b, r).unwrap();
    let (ga, gb) = (a.to_host(&s).unwrap(), b.to_host(&s).unwrap());
    for i in 0..n {
        let (x, y) = (i % w, i / w);
        let inside = (2..12).contains(&x) && (1..4).contains(&y);
        assert_eq!(ga[i], if inside { a0[i] + b0[i] } else { a0[i] }, "a[{i}]");
        assert_eq!(gb[i], if inside { 0.0 } else { b0[i] }, "b[{i}]");
    }
    // Fill, sum (exact: multiples of 1/32), accumulate a sum into a device value, save/restore.
    let before = a.to_host(&s).unwrap();
    let mut saved = save_region(On::stream(&s), &a, r).unwrap();
    fill_region(On::stream(&s), &mut a, r, 0.5).unwrap();
    assert_eq!(sum_region(On::stream(&s), &a, r).unwrap(), 15.0);
    let mut v = s.clone_htod(&[1.0f32]).unwrap();
    accumulate_sum_region(On::stream(&s), &mut v, &a, r).unwrap();
    assert_eq!(s.clone_dtoh(&v).unwrap(), [16.0]);
    restore_region(On::stream(&s), &mut a, r, &mut saved).unwrap();
    assert_eq!(a.to_host(&s).unwrap(), before);
}

/// The runtime's reverse of `x → array box → y` with the linear side in pinned (`alloc_pinned`)
/// or unified (`alloc_unified`) memory, for a 2-D and a 3-D box at an offset, smaller than the
/// array, the linear rows padded: `d_array[box] += dy; dy ← 0`, then `dx += d_array[box];
/// d_array[box] ← 0`. `dx == 2x` exactly in the box, every padding element untouched, `dy`'s box
/// `+0.0`, and the array shadow (its box starting at `-0.0`) reads back all `+0.0`.
fn pinned_unified_case<L: ShadowMemory<Elem = f32>>(
    s: &Arc<CudaStream>,
    make: impl Fn(&[f32]) -> L,
    read: impl Fn(&L) -> Vec<f32>,
    kind: &str,
) {
    let cases = [
        ((33, 17, 1), (3, 4, 0), (20, 9, 1)),
        ((12, 10, 6), (1, 2, 3), (7, 5, 2)),
    ];
    for ((w, h, d), origin, (bw, bh, bd)) in cases {
        let what = format!("{kind}, {w}x{h}x{d} at {origin:?}");
        let n = w * h * d;
        let arr = CudaArray::<f32>::new(s.context(), w, h, d).unwrap();
        let r = arr.region(origin, (bw, bh, bd));
        let inside_a: Vec<usize> = (0..bd)
            .flat_map(|z| (0..bh).flat_map(move |y| (0..bw).map(move |x| (x, y, z))))
            .map(|(x, y, z)| (origin.0 + x) + w * ((origin.1 + y) + h * (origin.2 + z)))
            .collect();
        // The linear side: rows `bw + 3` elements apart, `bh + 1` rows a slice, from element 2.
        let lp = bw + 3;
        let lr = Pitched::slices(2, bw, bh, bd, lp * 4, bh + 1);
        let len = 2 + (bd - 1) * lp * (bh + 1) + (bh - 1) * lp + bw + 1;
        let inside_l: Vec<usize> = (0..bd)
            .flat_map(|z| (0..bh).flat_map(move |y| (0..bw).map(move |x| (x, y, z))))
            .map(|(x, y, z)| 2 + x + lp * y + lp * (bh + 1) * z)
            .collect();
        let x = ramp(len, -1.5);
        for width in [1usize, 3] {
            for k in 0..width {
                let scale = 2.0 * (k + 1) as f32;
                let mut start = vec![0.0f32; n];
                for &i in &inside_a {
                    start[i] = -0.0;
                }
                let mut da = CudaArray::<f32>::new(s.context(), w, h, d).unwrap();
                da.copy_from_host(s, &start).unwrap();
                let mut dy0 = vec![-3.25f32; len];
                let mut dx0 = vec![5.25f32; len];
                for &j in &inside_l {
                    dy0[j] = scale * x[j];
                    dx0[j] = 0.0;
                }
                let (mut dy, mut dx) = (make(&dy0), make(&dx0));
                accumulate_and_zero_region(On::stream(s), &mut da, r, &mut dy, lr).unwrap();
                accumulate_and_zero_region(On::stream(s), &mut dx, lr, &mut da, r).unwrap();
                s.synchronize().unwrap();
                let (gx, gy) = (read(&dx), read(&dy));
                let mut want_x = dx0.clone();
                let mut want_y = dy0.clone();
                for &j in &inside_l {
                    want_x[j] = scale * x[j];
                    want_y[j] = 0.0;
                }
                let b = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(b(&gx), b(&want_x), "dx == 2x (lane {k}), {what}");
                assert_eq!(b(&gy), b(&want_y), "dy's box +0.0 (lane {k}), {what}");
                assert!(
                    da.to_host(s).unwrap().iter().all(|v| v.to_bits() == 0),
                    "array shadow all +0.0 (lane {k}), {what}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn pinned_and_unified_round_trip_through_array_boxes() {
    let s = gpu();
    pinned_unified_case(
        &s,
        |v| {
            // SAFETY: every element is written before it is read.
            let mut p: PinnedHostSlice<f32> = unsafe { s.context().alloc_pinned(v.len()) }.unwrap();
            p.as_mut_slice().unwrap().copy_from_slice(v);
            p
        },
        |p| p.as_slice().unwrap().to_vec(),
        "pinned",
    );
    pinned_unified_case(
        &s,
        |v| {
            // SAFETY: as above.
            let mut u: UnifiedSlice<f32> =
                unsafe { s.context().alloc_unified(v.len(), true) }.unwrap();
            u.as_mut_slice().unwrap().copy_from_slice(v);
            u
        },
        |u| u.as_slice().unwrap().to_vec(),
        "unified",
    );
}

/// `array[box] ← 0` for one element type, on arrays of every dimensionality, boxes at odd offsets
/// and whole arrays: the box reads back `+0.0` in every part, everything else as it was.
fn zero_boxes_of<T: ArrayElement>(s: &Arc<CudaStream>, surface: bool) {
    let cases = [
        ((1000, 1, 1), (3, 0, 0), (517, 1, 1)),
        ((37, 11, 1), (5, 2, 0), (19, 7, 1)),
        ((9, 5, 4), (1, 1, 1), (7, 3, 2)),
        ((20, 1, 6), (2, 0, 1), (15, 1, 4)),
        ((33, 17, 3), (0, 0, 0), (33, 17, 3)),
    ];
    for ((w, h, d), at, size) in cases {
        let what = format!("{:?}, {w}×{h}×{d}, box {size:?} at {at:?}", T::DTYPE);
        let n = w * h * d;
        let before: Vec<T> = (0..n)
            .map(|i| T::from_parts([1.0 + (i % 89) as f64 / 8.0, -0.5 - (i % 7) as f64]))
            .collect();
        let mut arr = if surface {
            CudaArray::<T>::new(s.context(), w, h, d).unwrap()
        } else {
            CudaArray::<T>::without_surface(s.context(), w, h, d).unwrap()
        };
        assert_eq!(arr.zeroes_by_kernel(), surface, "{what}");
        arr.copy_from_host(s, &before).unwrap();
        let r = arr.region(at, size);
        zero_region(On::Stream(s), &mut arr, r).unwrap();
        let got = arr.to_host(s).unwrap();
        let inside = |i: usize| {
            let (x, y, z) = (i % w, (i / w) % h, i / (w * h));
            (at.0..at.0 + size.0).contains(&x)
                && (at.1..at.1 + size.1).contains(&y)
                && (at.2..at.2 + size.2).contains(&z)
        };
        for (i, (g, b)) in got.iter().zip(&before).enumerate() {
            let (g, b) = (g.to_parts(), b.to_parts());
            if inside(i) {
                assert!(
                    g.iter().all(|p| p.to_bits() == 0),
                    "{what}: element {i} is {g:?}"
                );
            } else {
                assert_eq!(g, b, "{what}: element {i} outside the box changed");
            }
        }
    }
}

/// The surface-store kernel for every element size it has (2, 4, 8, 16 bytes), and the
/// zero-buffer copy for arrays without a surface.
#[test]
#[ignore = "needs a GPU"]
fn zeroing_boxes_of_every_element_size_and_dimensionality() {
    use half::{bf16, f16};
    use num_complex::Complex;
    let s = gpu();
    for surface in [true, false] {
        zero_boxes_of::<f16>(&s, surface);
        zero_boxes_of::<bf16>(&s, surface);
        zero_boxes_of::<f32>(&s, surface);
        zero_boxes_of::<f64>(&s, surface);
        zero_boxes_of::<Complex<f32>>(&s, surface);
        zero_boxes_of::<Complex<f64>>(&s, surface);
    }
}

/// Arrays wider than the device's surfaces allow are still made (without a surface) and zeroed.
#[test]
#[ignore = "needs a GPU"]
fn arrays_past_the_surface_limits_are_made_and_zeroed_by_copies() {
    use rules_runtime::cudarc::driver::sys::CUdevice_attribute as A;
    let s = gpu();
    let ctx = s.context();
    let surf = ctx
        .attribute(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH)
        .unwrap() as usize;
    let tex = ctx
        .attribute(A::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH)
        .unwrap() as usize;
    let small = CudaArray::<f32>::new(ctx, surf, 1, 1).unwrap();
    assert!(
        small.zeroes_by_kernel(),
        "{surf} wide is within the surface limit"
    );
    if tex <= surf {
        eprintln!("this device's 1D surfaces are as wide as its 1D arrays ({surf}): nothing past");
        return;
    }
    let w = tex;
    let mut arr = CudaArray::<f32>::new(ctx, w, 1, 1).unwrap();
    assert!(
        !arr.zeroes_by_kernel(),
        "{w} wide is past the surface limit {surf}"
    );
    arr.copy_from_host(&s, &ramp(w, 1.0)).unwrap();
    let r = arr.region((1, 0, 0), (w - 2, 1, 1));
    zero_region(On::Stream(&s), &mut arr, r).unwrap();
    let got = arr.to_host(&s).unwrap();
    assert_eq!(got[0], 1.0);
    assert_eq!(got[w - 1], ramp(w, 1.0)[w - 1]);
    assert!(got[1..w - 1].iter().all(|v| v.to_bits() == 0));
}

/// `T`'s bytes (every element type is plain floats), for moving test data in and out of device
/// memory allocated as bytes.
fn bytes_of<T: ArrayElement>(v: &[T]) -> &[u8] {
    // SAFETY: plain old data; the bytes are read only while `v` is borrowed.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), size_of_val(v)) }
}

/// The four operations between a box of an array of `T` and a box of linear memory at an odd
/// offset, pageable host memory (staged) or device memory (one pass through the array's surface):
/// `lin[box] += arr[box]`, the same and `arr[box] ← 0`, `arr[box] += lin[box]`, the same and
/// `lin[box] ← 0`. Sums exact (the host's `T::add`), zeros `+0.0`, sources of plain accumulates
/// unchanged, nothing outside either box touched.
fn reverses_through_arrays_of<T: ArrayElement>(s: &Arc<CudaStream>) {
    let (w, h, d) = (13, 7, 3);
    let (at, (bw, bh, bd)) = ((2, 1, 1), (9, 5, 2));
    let val = |i: usize, k: f64| T::from_parts([k + (i % 13) as f64 / 4.0, 0.25 - (i % 5) as f64]);
    let a0: Vec<T> = (0..w * h * d).map(|i| val(i, 1.0)).collect();
    let m = bw * bh * bd;
    let l0: Vec<T> = (0..m + 5).map(|i| val(i, -3.5)).collect();
    let rl = Pitched::slices(3, bw, bh, bd, bw * size_of::<T>(), bh);
    let in_array = |i: usize| {
        let (x, y, z) = (i % w, (i / w) % h, i / (w * h));
        (at.0..at.0 + bw).contains(&x)
            && (at.1..at.1 + bh).contains(&y)
            && (at.2..at.2 + bd).contains(&z)
    };
    // The array element paired with linear element 3 + j.
    let pair = |j: usize| {
        let (x, y, z) = (j % bw, (j / bw) % bh, j / (bw * bh));
        (at.0 + x) + w * ((at.1 + y) + h * (at.2 + z))
    };
    let is_zero = |v: T| v.to_parts().iter().all(|p| p.to_bits() == 0);
    for on_device in [false, true] {
        for (array_is_acc, take) in [(false, false), (false, true), (true, false), (true, true)] {
            let what = format!(
                "{:?}, linear on the {}, array {}, {}",
                T::DTYPE,
                if on_device { "device" } else { "host" },
                if array_is_acc {
                    "accumulates"
                } else {
                    "is the source"
                },
                if take { "and zero" } else { "accumulate only" }
            );
            let mut arr = CudaArray::<T>::new(s.context(), w, h, d).unwrap();
            arr.copy_from_host(s, &a0).unwrap();
            let ra = arr.region(at, (bw, bh, bd));
            let mut host = l0.clone();
            let mut dev = s.clone_htod(bytes_of(&l0)).unwrap();
            let lin_after = {
                let (p, _sync) = dev.device_ptr_mut(s);
                // SAFETY: `dev` holds `l0.len()` elements of `T` (as bytes, 256-byte aligned),
                // on this stream's device, used by nothing else while `raw` lives.
                let mut raw =
                    unsafe { RawShadow::new(MemoryKind::Device, p as *mut T, 0, l0.len(), "lin") }
                        .unwrap();
                let on = On::Stream(s);
                let r = match (on_device, array_is_acc, take) {
                    (false, false, false) => accumulate_region(on, &mut host, rl, &arr, ra),
                    (false, false, true) => {
                        accumulate_and_zero_region(on, &mut host, rl, &mut arr, ra)
                    }
                    (false, true, false) => accumulate_region(on, &mut arr, ra, &host, rl),
                    (false, true, true) => {
                        accumulate_and_zero_region(on, &mut arr, ra, &mut host, rl)
                    }
                    (true, false, false) => accumulate_region(on, &mut raw, rl, &arr, ra),
                    (true, false, true) => {
                        accumulate_and_zero_region(on, &mut raw, rl, &mut arr, ra)
                    }
                    (true, true, false) => accumulate_region(on, &mut arr, ra, &raw, rl),
                    (true, true, true) => {
                        accumulate_and_zero_region(on, &mut arr, ra, &mut raw, rl)
                    }
                };
                r.unwrap_or_else(|e| panic!("{what}: {e}"));
                on_device
            };
            let lin: Vec<T> = if lin_after {
                let b = s.clone_dtoh(&dev).unwrap();
                // SAFETY: the bytes of `l0.len()` elements of `T`, read unaligned.
                (0..l0.len())
                    .map(|k| unsafe { b.as_ptr().cast::<T>().add(k).read_unaligned() })
                    .collect()
            } else {
                host
            };
            let got = arr.to_host(s).unwrap();
            for j in 0..l0.len() {
                if !(3..3 + m).contains(&j) {
                    assert_eq!(
                        lin[j].to_parts(),
                        l0[j].to_parts(),
                        "{what}: lin[{j}] outside"
                    );
                    continue;
                }
                let i = pair(j - 3);
                let sum = T::add(l0[j], a0[i]);
                let (acc, other, other0) = if array_is_acc {
                    (got[i], lin[j], l0[j])
                } else {
                    (lin[j], got[i], a0[i])
                };
                assert_eq!(acc.to_parts(), sum.to_parts(), "{what}: element {j}");
                if take {
                    assert!(is_zero(other), "{what}: element {j} not zeroed");
                } else {
                    assert_eq!(other.to_parts(), other0.to_parts(), "{what}: source {j}");
                }
            }
            for (i, (g, a)) in got.iter().zip(&a0).enumerate() {
                if !in_array(i) {
                    assert_eq!(g.to_parts(), a.to_parts(), "{what}: array[{i}] outside");
                }
            }
        }
    }
}

/// Every element type an array holds, through the four operations, staged and direct.
#[test]
#[ignore = "needs a GPU"]
fn reverses_through_arrays_of_every_element_type() {
    use half::{bf16, f16};
    use num_complex::Complex;
    let s = gpu();
    reverses_through_arrays_of::<f16>(&s);
    reverses_through_arrays_of::<bf16>(&s);
    reverses_through_arrays_of::<f32>(&s);
    reverses_through_arrays_of::<f64>(&s);
    reverses_through_arrays_of::<Complex<f32>>(&s);
    reverses_through_arrays_of::<Complex<f64>>(&s);
}

/// The one-pass reverses where the kernel moves 16-byte words (a 3D array whose box starts on a
/// 16-byte boundary along x, the linear box in device memory at a 16-byte aligned start and row
/// pitch): rows of two words and one element more, boxes of several slices and of one; the same
/// boxes in 2D and 1D arrays, which take the element kernels. Both boxes end where their
/// buffers end (the array box at the array's far corner, the linear box at the allocation's
/// last element), so a word or element read or written past either box is out of bounds
/// (memcheck; the surface traps). Sums exact, zeros `+0.0`, sources of plain accumulates
/// unchanged, nothing outside either box touched (the linear box's row padding included).
fn word_passes_of<T: ArrayElement>(s: &Arc<CudaStream>) {
    let size = size_of::<T>();
    let per_word = (16 / size).max(1);
    let bw = 2 * per_word + 1;
    // Array shapes with the box at their far corner, starting one word in along x.
    for ((h, d), (at_y, at_z)) in [
        ((5, 3), (1, 1)),
        ((4, 2), (0, 1)),
        ((6, 1), (2, 0)),
        ((1, 1), (0, 0)),
    ] {
        let w = per_word + bw;
        let (bh, bd) = (h - at_y, d - at_z);
        let at = (per_word, at_y, at_z);
        // Linear rows padded to a multiple of 16 bytes, plus one word; slices one row apart more.
        let row = (bw * size).div_ceil(16) * 16 + 16;
        let row_el = row / size;
        let slice_rows = bh + 1;
        let slice_el = row_el * slice_rows;
        let len = (bd - 1) * slice_el + (bh - 1) * row_el + bw;
        let rl = Pitched::slices(0, bw, bh, bd, row, slice_rows);
        let val =
            |i: usize, k: f64| T::from_parts([k + (i % 13) as f64 / 4.0, 0.25 - (i % 5) as f64]);
        let a0: Vec<T> = (0..w * h * d).map(|i| val(i, 1.0)).collect();
        let l0: Vec<T> = (0..len).map(|i| val(i, -3.5)).collect();
        // The array element paired with linear element j, if j is in the box.
        let pair = |j: usize| {
            let (z, y, x) = (j / slice_el, (j % slice_el) / row_el, j % row_el);
            (x < bw && y < bh).then(|| (at.0 + x) + w * ((at.1 + y) + h * (at.2 + z)))
        };
        let in_array = |i: usize| {
            let (x, y, z) = (i % w, (i / w) % h, i / (w * h));
            x >= at.0 && y >= at.1 && z >= at.2
        };
        let is_zero = |v: T| v.to_parts().iter().all(|p| p.to_bits() == 0);
        for (array_is_acc, take) in [(false, false), (false, true), (true, false), (true, true)] {
            let what = format!(
                "{:?}, array {w}x{h}x{d}, box {bw}x{bh}x{bd} at {at:?}, array_is_acc {array_is_acc}, take {take}",
                T::DTYPE
            );
            let mut arr = CudaArray::<T>::new(s.context(), w, h, d).unwrap();
            arr.copy_from_host(s, &a0).unwrap();
            let ra = arr.region(at, (bw, bh, bd));
            let mut dev = s.clone_htod(bytes_of(&l0)).unwrap();
            {
                let (p, _sync) = dev.device_ptr_mut(s);
                // SAFETY: `dev` holds `l0.len()` elements of `T` (as bytes, 256-byte aligned),
                // on this stream's device, used by nothing else while `raw` lives.
                let mut raw =
                    unsafe { RawShadow::new(MemoryKind::Device, p as *mut T, 0, len, "lin") }
                        .unwrap();
                let on = On::Stream(s);
                let r = match (array_is_acc, take) {
                    (false, false) => accumulate_region(on, &mut raw, rl, &arr, ra),
                    (false, true) => accumulate_and_zero_region(on, &mut raw, rl, &mut arr, ra),
                    (true, false) => accumulate_region(on, &mut arr, ra, &raw, rl),
                    (true, true) => accumulate_and_zero_region(on, &mut arr, ra, &mut raw, rl),
                };
                r.unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            let b = s.clone_dtoh(&dev).unwrap();
            // SAFETY: the bytes of `len` elements of `T`, read unaligned.
            let lin: Vec<T> = (0..len)
                .map(|k| unsafe { b.as_ptr().cast::<T>().add(k).read_unaligned() })
                .collect();
            let got = arr.to_host(s).unwrap();
            for j in 0..len {
                let Some(i) = pair(j) else {
                    assert_eq!(
                        lin[j].to_parts(),
                        l0[j].to_parts(),
                        "{what}: lin[{j}] outside"
                    );
                    continue;
                };
                let sum = T::add(l0[j], a0[i]);
                let (acc, other, other0) = if array_is_acc {
                    (got[i], lin[j], l0[j])
                } else {
                    (lin[j], got[i], a0[i])
                };
                assert_eq!(acc.to_parts(), sum.to_parts(), "{what}: element {j}");
                if take {
                    assert!(is_zero(other), "{what}: element {j} not zeroed");
                } else {
                    assert_eq!(other.to_parts(), other0.to_parts(), "{what}: source {j}");
                }
            }
            for (i, (g, a)) in got.iter().zip(&a0).enumerate() {
                if !in_array(i) {
                    assert_eq!(g.to_parts(), a.to_parts(), "{what}: array[{i}] outside");
                }
            }
        }
    }
}

/// Every element type through the word passes (16-byte elements take their element path).
#[test]
#[ignore = "needs a GPU"]
fn word_passes_touch_only_their_boxes() {
    use half::{bf16, f16};
    use num_complex::Complex;
    let s = gpu();
    word_passes_of::<f16>(&s);
    word_passes_of::<bf16>(&s);
    word_passes_of::<f32>(&s);
    word_passes_of::<f64>(&s);
    word_passes_of::<Complex<f32>>(&s);
    word_passes_of::<Complex<f64>>(&s);
}

/// Threads at once, each on its own stream with its own arrays (the pool's staging buffers and
/// the kernels' module are shared): every result exact.
#[test]
#[ignore = "needs a GPU"]
fn arrays_from_several_threads_at_once() {
    let _ = gpu();
    std::thread::scope(|sc| {
        for t in 0..4 {
            sc.spawn(move || {
                let s = gpu();
                for round in 0..5 {
                    let (w, h) = (64 + t, 33 + round);
                    let n = w * h;
                    let mut arr = CudaArray::<f32>::new(s.context(), w, h, 1).unwrap();
                    let a = ramp(n, t as f32);
                    arr.copy_from_host(&s, &a).unwrap();
                    let mut lin = ramp(n, 100.0 + round as f32);
                    let want: Vec<f32> = lin.iter().zip(&a).map(|(l, a)| l + a).collect();
                    let whole = arr.whole();
                    accumulate_and_zero_region(On::Stream(&s), &mut lin, whole, &mut arr, whole)
                        .unwrap();
                    assert_eq!(lin, want, "thread {t}, round {round}");
                    let back = arr.to_host(&s).unwrap();
                    assert!(
                        back.iter().all(|v| v.to_bits() == 0),
                        "thread {t}, round {round}"
                    );
                }
            });
        }
    });
}
