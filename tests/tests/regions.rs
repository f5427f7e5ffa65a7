//! Shadow work on boxes (pitched regions) in host memory: the operations behind the region rules,
//! against a plain reference, with sentinels in the padding and around the boxes that must come
//! back untouched.

use half::{bf16, f16};
use num_complex::Complex;
use rules_runtime::memory::MemoryKind;
use rules_runtime::memory::raw::RawShadow;
use rules_runtime::testing::random_vec;
use rules_runtime::{
    Differentiable, Error, On, Pitched, accumulate_and_zero_region, accumulate_region,
    accumulate_sum_region, fill_region, restore_region, save_region, sum_region, zero_region,
};
use rules_tests::Rng as Lcg;

/// A value no operation produces from the random data (multiples of 1/64 in [-1, 1]).
fn sentinel<T: Differentiable>() -> T {
    T::from_parts([777.0, -555.0])
}

/// The element indices of a box, row by row.
fn indices(r: &Pitched, size: usize) -> Vec<usize> {
    rules_tests::box_indices(r, size)
}

/// A random box of `size`-byte elements and the buffer length it needs (plus some slack).
fn random_box(rng: &mut Lcg, size: usize) -> (Pitched, usize) {
    let (w, h, d) = (1 + rng.below(7), 1 + rng.below(4), 1 + rng.below(3));
    let pitch = (w + rng.below(3)) * size;
    let slice_height = h + rng.below(2);
    let offset = rng.below(5);
    let r = Pitched::slices(offset, w, h, d, pitch, slice_height);
    let row = pitch / size;
    let len = offset + (d - 1) * row * slice_height + (h - 1) * row + w + rng.below(4);
    (r, len)
}

/// Buffers of `len` sentinels, with random values in the box.
fn boxed<T: Differentiable>(len: usize, r: &Pitched, seed: u64) -> Vec<T> {
    let mut v = vec![sentinel::<T>(); len];
    let idx = indices(r, size_of::<T>());
    for (i, x) in idx.iter().zip(random_vec::<T>(idx.len(), seed)) {
        v[*i] = x;
    }
    v
}

fn accumulate_and_zero_matches_reference<T: Differentiable + std::fmt::Debug>() {
    let mut rng = Lcg(0x5eed + T::DTYPE as u64);
    // Fewer cases under Miri, which interprets every element access.
    for case in 0..if cfg!(miri) { 12 } else { 200u64 } {
        let size = size_of::<T>();
        let (ra, la) = random_box(&mut rng, size);
        let (rb0, lb) = random_box(&mut rng, size);
        // The source box has the accumulator's shape and its own offset, pitch and slice height.
        let pitch = ra.width.max(rb0.pitch / size) * size;
        let rb = Pitched::slices(
            rb0.offset,
            ra.width,
            ra.height,
            ra.depth,
            pitch,
            ra.height + (case % 2) as usize,
        );
        let row = pitch / size;
        let lb = lb.max(
            rb.offset + (rb.depth - 1) * row * rb.slice_height + (rb.height - 1) * row + rb.width,
        );
        let mut acc: Vec<T> = boxed(la, &ra, case);
        let mut src: Vec<T> = boxed(lb, &rb, case + 1000);
        let (ia, ib) = (indices(&ra, size), indices(&rb, size));
        let mut want_acc = acc.clone();
        let mut want_src = src.clone();
        for (a, b) in ia.iter().zip(&ib) {
            want_acc[*a] = T::add(want_acc[*a], want_src[*b]);
            want_src[*b] = T::zero();
        }
        let mut read_only = acc.clone();
        accumulate_region(On::Host, &mut read_only, ra, &src, rb).unwrap();
        assert_eq!(
            read_only, want_acc,
            "accumulate, case {case}: {ra:?} {rb:?}"
        );
        accumulate_and_zero_region(On::Host, &mut acc, ra, &mut src, rb).unwrap();
        assert_eq!(acc, want_acc, "case {case}: {ra:?} {rb:?}");
        assert_eq!(src, want_src, "case {case}: {ra:?} {rb:?}");
    }
}

#[test]
fn accumulate_and_zero_boxes_every_dtype() {
    accumulate_and_zero_matches_reference::<f32>();
    accumulate_and_zero_matches_reference::<f64>();
    accumulate_and_zero_matches_reference::<f16>();
    accumulate_and_zero_matches_reference::<bf16>();
    accumulate_and_zero_matches_reference::<Complex<f32>>();
    accumulate_and_zero_matches_reference::<Complex<f64>>();
}

#[test]
fn zero_and_fill_touch_only_the_box() {
    let r = Pitched::slices(1, 3, 2, 2, 5 * 4, 3);
    let len = 1 + 5 * 3 + 5 + 3 + 2;
    let mut v: Vec<f32> = boxed(len, &r, 7);
    let inside = indices(&r, 4);
    fill_region(On::Host, &mut v, r, 2.5).unwrap();
    for (i, x) in v.iter().enumerate() {
        let want = if inside.contains(&i) { 2.5 } else { 777.0 };
        assert_eq!(*x, want, "element {i}");
    }
    zero_region(On::Host, &mut v, r).unwrap();
    for (i, x) in v.iter().enumerate() {
        let want = if inside.contains(&i) { 0.0 } else { 777.0 };
        assert_eq!(*x, want, "element {i}");
    }
}

#[test]
fn interleaved_boxes_of_one_buffer_are_disjoint() {
    // Two boxes of one allocation, rows of 2 every 4 elements, one shifted by 2: their byte
    // ranges overlap, their rows do not. Reached through two raw views of the same memory.
    let mut buf: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let p = buf.as_mut_ptr();
    let ra = Pitched::rows(0, 2, 4, 16);
    let rb = Pitched::rows(2, 2, 3, 16);
    let rb = Pitched { height: 4, ..rb };
    unsafe {
        let mut a = RawShadow::new(MemoryKind::Host, p, 0, 16, "a").unwrap();
        let mut b = RawShadow::new(MemoryKind::Host, p, 0, 16, "b").unwrap();
        accumulate_and_zero_region(On::Host, &mut a, ra, &mut b, rb).unwrap();
    }
    let want: Vec<f32> = (0..16)
        .map(|i| match i % 4 {
            0 | 1 => (i + i + 2) as f32,
            _ => 0.0,
        })
        .collect();
    assert_eq!(buf, want);
}

#[test]
fn self_copy_box_is_identity_and_partial_overlap_changes_nothing() {
    let mut buf: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let before = buf.clone();
    let p = buf.as_mut_ptr();
    let r = Pitched::rows(1, 2, 3, 16);
    unsafe {
        let mut a = RawShadow::new(MemoryKind::Host, p, 0, 16, "a").unwrap();
        let mut b = RawShadow::new(MemoryKind::Host, p, 0, 16, "b").unwrap();
        accumulate_and_zero_region(On::Host, &mut a, r, &mut b, r).unwrap();
        let shifted = Pitched { offset: 2, ..r };
        let e = accumulate_and_zero_region(On::Host, &mut a, r, &mut b, shifted).unwrap_err();
        assert!(matches!(e, Error::PartialOverlap { .. }), "{e}");
    }
    assert_eq!(buf, before);
}

#[test]
fn bad_boxes_are_typed_errors_and_change_nothing() {
    let mut a = vec![1.0f32; 32];
    let mut b = vec![2.0f32; 32];
    let ok = Pitched::rows(0, 3, 2, 16);
    let cases = [
        (Pitched::rows(0, 3, 2, 14), ok, "not a multiple"),
        (Pitched::rows(0, 5, 2, 16), ok, "longer than the pitch"),
        (Pitched::rows(30, 3, 2, 16), ok, "reaches element"),
        (Pitched::slices(0, 3, 2, 2, 16, 1), ok, "slice height"),
        (ok, Pitched::rows(0, 3, 3, 16), "box is"),
    ];
    for (ra, rb, msg) in cases {
        let e = accumulate_and_zero_region(On::Host, &mut a, ra, &mut b, rb).unwrap_err();
        assert!(matches!(e, Error::BadRegion { .. }), "{e}");
        assert!(e.to_string().contains(msg), "{e} (wanted {msg:?})");
        let e = zero_region(On::Host, &mut a, Pitched { offset: 40, ..ok }).unwrap_err();
        assert!(matches!(e, Error::BadRegion { .. }), "{e}");
    }
    assert_eq!((a, b), (vec![1.0; 32], vec![2.0; 32]));
}

#[test]
fn sums_are_exact_where_exact_and_close_to_f64() {
    // Multiples of 1/64: every partial sum is exact in f64, so the sum is exact.
    let r = Pitched::slices(3, 5, 4, 3, 7 * 4, 5);
    let len = 3 + 2 * 7 * 5 + 3 * 7 + 5 + 1;
    let v: Vec<f32> = boxed(len, &r, 11);
    let exact: f64 = indices(&r, 4).iter().map(|&i| f64::from(v[i])).sum();
    assert_eq!(f64::from(sum_region(On::Host, &v, r).unwrap()), exact);
    // Complex parts are summed apart.
    let rc = Pitched { pitch: 7 * 16, ..r };
    let c: Vec<Complex<f64>> = boxed(len, &rc, 12);
    let want = indices(&rc, 16)
        .iter()
        .fold(Complex::new(0.0, 0.0), |s, &i| s + c[i]);
    assert_eq!(sum_region(On::Host, &c, rc).unwrap(), want);
    // Values of all magnitudes: within the stated bound of an exact (f64 of f32) reference.
    let n = if cfg!(miri) { 1 << 8 } else { 1 << 16 };
    let mut rng = Lcg(3);
    let big: Vec<f32> = (0..n)
        .map(|_| (rng.below(1 << 20) as f32 - 5e5) * 2f32.powi(rng.below(40) as i32 - 20))
        .collect();
    let r = Pitched::linear::<f32>(0, n);
    let got = sum_region(On::Host, &big, r).unwrap();
    let reference: f64 = big.iter().map(|&x| f64::from(x)).sum();
    let abs: f64 = big.iter().map(|&x| f64::from(x).abs()).sum();
    assert!(
        (f64::from(got) - reference).abs()
            <= f64::from(f32::EPSILON) * reference.abs() + 1e-12 * abs,
        "{got} vs {reference}"
    );
    // An empty box sums to zero.
    assert_eq!(
        sum_region(On::Host, &big, Pitched::rows(0, 0, 3, 16)).unwrap(),
        0.0
    );
}

/// The adjoint identity of a pitched copy: forward copies box to box, reverse is
/// accumulate-and-zero of the boxes; ⟨J v, w⟩ = ⟨v, Jᵀ w⟩ with everything else held at zero.
#[test]
fn pitched_copy_adjoint_identity() {
    let mut rng = Lcg(99);
    for case in 0..if cfg!(miri) { 8 } else { 100u64 } {
        let (rs, ls) = random_box(&mut rng, 8);
        let pitch = (rs.width + rng.below(3)) * 8;
        let rd = Pitched::slices(
            rng.below(4),
            rs.width,
            rs.height,
            rs.depth,
            pitch,
            rs.height,
        );
        let row = pitch / 8;
        let ld =
            rd.offset + (rd.depth - 1) * row * rd.slice_height + (rd.height - 1) * row + rd.width;
        let v: Vec<f64> = random_vec(ls, case);
        let w: Vec<f64> = random_vec(ld, case + 500);
        // J v: the destination is v's box, written over zeros (the copy overwrites dst).
        let mut jv = vec![0.0f64; ld];
        let (is, id) = (indices(&rs, 8), indices(&rd, 8));
        for (d, s) in id.iter().zip(&is) {
            jv[*d] = v[*s];
        }
        // Jᵀ w through the runtime.
        let mut jtw = vec![0.0f64; ls];
        let mut w_shadow = w.clone();
        accumulate_and_zero_region(On::Host, &mut jtw, rs, &mut w_shadow, rd).unwrap();
        let lhs: f64 = jv.iter().zip(&w).map(|(a, b)| a * b).sum();
        let rhs: f64 = v.iter().zip(&jtw).map(|(a, b)| a * b).sum();
        assert_eq!(lhs, rhs, "case {case}");
        for &d in &id {
            assert_eq!(w_shadow[d], 0.0);
        }
    }
}

#[test]
fn a_sum_is_added_into_a_one_element_value_shadow() {
    let r = Pitched::rows(1, 3, 4, 40);
    let v: Vec<f64> = boxed(1 + 3 * 5 + 3 + 2, &r, 21);
    let exact: f64 = indices(&r, 8).iter().map(|&i| v[i]).sum();
    let mut acc = vec![1.5f64];
    accumulate_sum_region(On::Host, &mut acc, &v, r).unwrap();
    assert_eq!(acc, [1.5 + exact]);
    // A value shadow of another length, or inside the summed box: typed errors, nothing changed.
    let mut two = vec![0.0f64; 2];
    let e = accumulate_sum_region(On::Host, &mut two, &v, r).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    assert_eq!(two, [0.0; 2]);
    let mut buf = v.clone();
    let p = buf.as_mut_ptr();
    unsafe {
        let whole = RawShadow::new(MemoryKind::Host, p, 0, buf.len(), "box").unwrap();
        let mut inside = RawShadow::new(MemoryKind::Host, p, 7, 1, "value").unwrap();
        let e = accumulate_sum_region(On::Host, &mut inside, &whole, r).unwrap_err();
        assert!(matches!(e, Error::Aliasing { .. }), "{e}");
    }
    assert_eq!(buf, v);
}

#[test]
fn a_saved_box_is_restored_and_nothing_else_is_touched() {
    let r = Pitched::slices(2, 3, 2, 2, 16, 3);
    let len = 2 + 4 * 3 + 4 + 3 + 1;
    let orig: Vec<f32> = boxed(len, &r, 5);
    let mut buf = orig.clone();
    let mut saved = save_region(On::Host, &buf, r).unwrap();
    fill_region(On::Host, &mut buf, r, -3.0).unwrap();
    buf[0] = 42.0; // outside the box: the restore must not undo it
    restore_region(On::Host, &mut buf, r, &mut saved).unwrap();
    let mut want = orig.clone();
    want[0] = 42.0;
    assert_eq!(buf, want);
    let e = restore_region(On::Host, &mut buf, Pitched { width: 2, ..r }, &mut saved).unwrap_err();
    assert!(matches!(e, Error::BadRegion { .. }), "{e}");
}
