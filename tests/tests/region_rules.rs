//! Region rules end to end on host memory: pitched 2D/3D copies (slices and raw pointers),
//! memsets, fills (a value taken by value, and a value in a one-element buffer), and `restore`.
//!
//! Each rule is a linear map of whole buffers, padding included: the destination's old contents
//! are an input, so outside its box the map is the identity and inside it the box of the source
//! (or the value, or 0). Exact adjoint checks ⟨J v, w⟩ = ⟨v, Jᵀ w⟩ with `J v` from the forward
//! rule and `Jᵀ w` from the augmented primal + reverse (tolerance 0: the random values are
//! multiples of 1/64), for every activity combination and widths 1 and 3; and `J v` and `Jᵀ w`
//! compared element by element with the map written out, so that a rule touching padding (or a
//! sentinel outside the box) fails even where the dot products would agree. Plus finite
//! differences through the forward rules.

use rules_runtime::testing::{adjoint_check, finite_difference_check, random_vec};
use rules_runtime::{
    Active, Const, Differentiable, Dual, Duplicated, DuplicatedOnly, Error, Result, derivative_rule,
};
use rules_runtime::{FillRule, MemsetRule, RawFillRule, RawMemsetRule, RawRegionRule, RegionRule};
use rules_tests::{lane_ptrs, lanes, ramp};

/// A pitched 2D copy of host rows: `height` rows of `width` elements, each side's rows its own
/// pitch (bytes) apart.
#[derivative_rule(copy2d)]
pub fn copy2d_host<T: Differentiable>(
    #[dst] dst: &mut [T],
    #[src] src: &[T],
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let (dr, sr) = (dpitch / size_of::<T>(), spitch / size_of::<T>());
    for r in 0..height {
        dst[r * dr..r * dr + width].copy_from_slice(&src[r * sr..r * sr + width]);
    }
}

/// A pitched 3D copy of host slices.
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy3d)]
pub fn copy3d_host<T: Differentiable>(
    #[dst] dst: &mut [T],
    #[src] src: &[T],
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[dst_slice_height] dsh: usize,
    #[src_slice_height] ssh: usize,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
) {
    let (dr, sr) = (dpitch / size_of::<T>(), spitch / size_of::<T>());
    for z in 0..depth {
        for r in 0..height {
            let (d, s) = ((z * dsh + r) * dr, (z * ssh + r) * sr);
            dst[d..d + width].copy_from_slice(&src[s..s + width]);
        }
    }
}

/// The pointer form of [`copy2d_host`], with offsets.
///
/// # Safety
/// Both boxes valid and disjoint.
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy2d, dst = host, src = host)]
pub unsafe fn copy2d_ptr<T: Differentiable>(
    #[dst] dst: *mut T,
    #[src] src: *const T,
    #[dst_offset] doff: usize,
    #[src_offset] soff: usize,
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let (dr, sr) = (dpitch / size_of::<T>(), spitch / size_of::<T>());
    for r in 0..height {
        unsafe {
            core::ptr::copy_nonoverlapping(src.add(soff + r * sr), dst.add(doff + r * dr), width)
        }
    }
}

/// A 2D memset of host rows to a byte pattern (`cuMemsetD2D8`-style).
#[derivative_rule(memset)]
pub fn memset_rows<T: Differentiable>(
    #[dst] dst: &mut [T],
    #[value] byte: u8,
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let r = pitch / size_of::<T>();
    for y in 0..height {
        let row = &mut dst[y * r..y * r + width];
        // SAFETY: `Differentiable` types are plain floats; every byte pattern is a value.
        unsafe { core::ptr::write_bytes(row.as_mut_ptr(), byte, width) };
    }
}

/// A memset of a run through a raw pointer.
///
/// # Safety
/// `dst + off .. + n` valid.
#[derivative_rule(memset, dst = host)]
pub unsafe fn memset_ptr<T: Differentiable>(
    #[dst] dst: *mut T,
    #[dst_offset] off: usize,
    #[len] n: usize,
    #[value] byte: u8,
) {
    unsafe { core::ptr::write_bytes(dst.add(off), byte, n) }
}

/// A 2D fill of host rows with a value of the element type.
#[derivative_rule(fill)]
pub fn fill_rows<T: Differentiable>(
    #[dst] dst: &mut [T],
    #[value] v: T,
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let r = pitch / size_of::<T>();
    for y in 0..height {
        dst[y * r..y * r + width].fill(v);
    }
}

/// A fill of a whole slice.
#[derivative_rule(fill)]
pub fn fill_all(#[dst] dst: &mut [f64], #[value] v: f64) {
    dst.fill(v);
}

/// A fill of a run through a raw pointer.
///
/// # Safety
/// `dst + off .. + n` valid.
#[derivative_rule(fill, dst = host)]
pub unsafe fn fill_ptr<T: Differentiable>(
    #[dst] dst: *mut T,
    #[dst_offset] off: usize,
    #[len] n: usize,
    #[value] v: T,
) {
    for i in 0..n {
        unsafe { dst.add(off + i).write(v) }
    }
}

/// A fill of rows from a value held in a one-element buffer (here a host slice; on the device,
/// a `CudaSlice` read by a fill kernel).
#[derivative_rule(fill)]
pub fn fill_rows_from<T: Differentiable>(
    #[dst] dst: &mut [T],
    #[value] v: &[T],
    #[dst_pitch] pitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    let r = pitch / size_of::<T>();
    for y in 0..height {
        dst[y * r..y * r + width].fill(v[0]);
    }
}

/// A plain copy whose reverse restores the destination's old contents.
#[derivative_rule(copy, restore)]
pub fn copy_restoring(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

/// A pitched copy whose reverse restores the destination's old box.
#[derivative_rule(copy2d, restore)]
pub fn copy2d_restoring(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[dst_pitch] dpitch: usize,
    #[src_pitch] spitch: usize,
    #[width] width: usize,
    #[height] height: usize,
) {
    copy2d_host(dst, src, dpitch, spitch, width, height);
}

/// A box: `depth` slices of `height` rows of `width` elements from `off`, rows `row` elements
/// apart, slices `slice` rows apart.
#[derive(Clone, Copy, Debug)]
struct Box3 {
    off: usize,
    row: usize,
    slice: usize,
}

/// The shape of one case: the box's extent, each side's layout, and the buffers' lengths (the
/// box's end plus a tail of sentinels).
#[derive(Clone, Copy, Debug)]
struct Geom {
    w: usize,
    h: usize,
    d: usize,
    dst: Box3,
    src: Box3,
}

impl Geom {
    fn elems(&self, b: Box3) -> Vec<usize> {
        let mut v = Vec::new();
        for z in 0..self.d {
            for y in 0..self.h {
                let start = b.off + (z * b.slice + y) * b.row;
                v.extend(start..start + self.w);
            }
        }
        v
    }
    fn len(&self, b: Box3) -> usize {
        self.elems(b).last().map_or(b.off, |e| e + 1) + 3
    }
    fn dlen(&self) -> usize {
        self.len(self.dst)
    }
    fn slen(&self) -> usize {
        self.len(self.src)
    }
    fn pitch<T>(&self, b: Box3) -> usize {
        b.row * size_of::<T>()
    }
}

/// 2D shapes (depth 1): widths 1 and 3 and odd, pitches with padding, heights 0, 1 and more.
fn shapes_2d() -> Vec<Geom> {
    let g = |w, h, drow, srow| Geom {
        w,
        h,
        d: 1,
        dst: Box3 {
            off: 0,
            row: drow,
            slice: h,
        },
        src: Box3 {
            off: 0,
            row: srow,
            slice: h,
        },
    };
    vec![
        g(1, 1, 1, 1),
        g(1, 4, 3, 2),
        g(3, 5, 4, 7),
        g(3, 2, 3, 3),
        g(5, 0, 6, 6),
        g(7, 3, 9, 8),
    ]
}

/// 3D shapes: slices with padding rows.
fn shapes_3d() -> Vec<Geom> {
    let g = |w, h, d, drow, dsl, srow, ssl| Geom {
        w,
        h,
        d,
        dst: Box3 {
            off: 0,
            row: drow,
            slice: dsl,
        },
        src: Box3 {
            off: 0,
            row: srow,
            slice: ssl,
        },
    };
    vec![
        g(1, 1, 1, 1, 1, 1, 1),
        g(3, 2, 3, 4, 3, 5, 2),
        g(2, 3, 2, 2, 4, 3, 3),
    ]
}

/// Which activity the destination has.
#[derive(Clone, Copy, Debug, PartialEq)]
enum DstMode {
    Dup,
    Only,
    Const,
}
const DST_MODES: [DstMode; 3] = [DstMode::Dup, DstMode::Only, DstMode::Const];

/// The map of a copy on whole buffers: `out = dst` outside the box, `src` (or 0) inside it.
fn copy_map<T: Differentiable>(g: &Geom, src: Option<&[T]>, dst: &[T]) -> Vec<T> {
    let mut out = dst.to_vec();
    for (d, s) in g.elems(g.dst).into_iter().zip(g.elems(g.src)) {
        out[d] = src.map_or_else(T::zero, |x| x[s]);
    }
    out
}

/// Runs one of the two-buffer rules with activities made from slices (or pointers): `$d` and
/// `$s` are bound to the activities, `$body` runs with them.
macro_rules! with_acts {
    (slices, $dm:expr, $src_active:expr, $y:expr, $dy:expr, $x:expr, $dx:expr, |$d:ident, $s:ident| $body:expr) => {
        match ($dm, $src_active) {
            (DstMode::Dup, true) => {
                let $d = Duplicated::batch(&mut $y[..], lanes(&mut $dy));
                let $s = Duplicated::batch(&$x[..], lanes(&mut $dx));
                $body
            }
            (DstMode::Dup, false) => {
                let $d = Duplicated::batch(&mut $y[..], lanes(&mut $dy));
                let $s = Const(&$x[..]);
                $body
            }
            (DstMode::Only, true) => {
                let $d = DuplicatedOnly::batch(&mut $y[..], lanes(&mut $dy));
                let $s = Duplicated::batch(&$x[..], lanes(&mut $dx));
                $body
            }
            (DstMode::Only, false) => {
                let $d = DuplicatedOnly::batch(&mut $y[..], lanes(&mut $dy));
                let $s = Const(&$x[..]);
                $body
            }
            (DstMode::Const, true) => {
                let $d = Const(&mut $y[..]);
                let $s = Duplicated::batch(&$x[..], lanes(&mut $dx));
                $body
            }
            (DstMode::Const, false) => {
                let $d = Const(&mut $y[..]);
                let $s = Const(&$x[..]);
                $body
            }
        }
    };
    (ptrs, $dm:expr, $src_active:expr, $y:expr, $dy:expr, $x:expr, $dx:expr, |$d:ident, $s:ident| $body:expr) => {
        match ($dm, $src_active) {
            (DstMode::Dup, true) => {
                let $d = Duplicated::batch($y.as_mut_ptr(), lane_ptrs(&mut $dy));
                let $s = Duplicated::batch($x.as_ptr(), lane_ptrs(&mut $dx));
                $body
            }
            (DstMode::Dup, false) => {
                let $d = Duplicated::batch($y.as_mut_ptr(), lane_ptrs(&mut $dy));
                let $s = Const($x.as_ptr());
                $body
            }
            (DstMode::Only, true) => {
                let $d = DuplicatedOnly::batch($y.as_mut_ptr(), lane_ptrs(&mut $dy));
                let $s = Duplicated::batch($x.as_ptr(), lane_ptrs(&mut $dx));
                $body
            }
            (DstMode::Only, false) => {
                let $d = DuplicatedOnly::batch($y.as_mut_ptr(), lane_ptrs(&mut $dy));
                let $s = Const($x.as_ptr());
                $body
            }
            (DstMode::Const, true) => {
                let $d = Const($y.as_mut_ptr());
                let $s = Duplicated::batch($x.as_ptr(), lane_ptrs(&mut $dx));
                $body
            }
            (DstMode::Const, false) => {
                let $d = Const($y.as_mut_ptr());
                let $s = Const($x.as_ptr());
                $body
            }
        }
    };
}

/// The three forms of pitched copy under test.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Form {
    Slices2d,
    Slices3d,
    Pointers2d,
}

/// Forward rule of `form` on `(y, dy) ← (x, dx)`.
fn forward<T: Differentiable, const W: usize>(
    form: Form,
    g: &Geom,
    dm: DstMode,
    src_active: bool,
    (y, dy): (&mut Vec<T>, &mut [Vec<T>; W]),
    (x, dx): (&[T], &mut [Vec<T>; W]),
) -> Result<()> {
    let (dp, sp) = (g.pitch::<T>(g.dst), g.pitch::<T>(g.src));
    let (ds, ss) = (g.dst.slice, g.src.slice);
    match form {
        Form::Slices2d => with_acts!(slices, dm, src_active, y, *dy, x, *dx, |d, s| {
            copy2d_host_rule(dp, sp, g.w, g.h).forward(d, s)
        }),
        Form::Slices3d => with_acts!(slices, dm, src_active, y, *dy, x, *dx, |d, s| {
            copy3d_host_rule(dp, sp, ds, ss, g.w, g.h, g.d).forward(d, s)
        }),
        Form::Pointers2d => with_acts!(ptrs, dm, src_active, y, *dy, x, *dx, |d, s| unsafe {
            copy2d_ptr_rule(g.dst.off, g.src.off, dp, sp, g.w, g.h).forward(d, s)
        }),
    }
}

/// Augmented primal then reverse of `form`.
fn reverse<T: Differentiable, const W: usize>(
    form: Form,
    g: &Geom,
    dm: DstMode,
    src_active: bool,
    (y, dy): (&mut Vec<T>, &mut [Vec<T>; W]),
    (x, dx): (&[T], &mut [Vec<T>; W]),
) -> Result<()> {
    let (dp, sp) = (g.pitch::<T>(g.dst), g.pitch::<T>(g.src));
    let (ds, ss) = (g.dst.slice, g.src.slice);
    let tape = match form {
        Form::Slices2d => with_acts!(slices, dm, src_active, y, *dy, x, *dx, |d, s| {
            copy2d_host_rule(dp, sp, g.w, g.h).augmented_primal(d, s)
        }),
        Form::Slices3d => with_acts!(slices, dm, src_active, y, *dy, x, *dx, |d, s| {
            copy3d_host_rule(dp, sp, ds, ss, g.w, g.h, g.d).augmented_primal(d, s)
        }),
        Form::Pointers2d => with_acts!(ptrs, dm, src_active, y, *dy, x, *dx, |d, s| unsafe {
            copy2d_ptr_rule(g.dst.off, g.src.off, dp, sp, g.w, g.h).augmented_primal(d, s)
        }),
    }?;
    match form {
        Form::Slices2d => with_acts!(slices, dm, src_active, y, *dy, x, *dx, |d, s| {
            copy2d_host_rule(dp, sp, g.w, g.h).reverse(tape, d, s)
        }),
        Form::Slices3d => with_acts!(slices, dm, src_active, y, *dy, x, *dx, |d, s| {
            copy3d_host_rule(dp, sp, ds, ss, g.w, g.h, g.d).reverse(tape, d, s)
        }),
        Form::Pointers2d => with_acts!(ptrs, dm, src_active, y, *dy, x, *dx, |d, s| unsafe {
            copy2d_ptr_rule(g.dst.off, g.src.off, dp, sp, g.w, g.h).reverse(tape, d, s)
        }),
    }
}

fn concat<T: Clone, const W: usize>(lanes: &[Vec<T>; W]) -> Vec<T> {
    lanes.iter().flatten().cloned().collect()
}

fn split<T: Clone, const W: usize>(v: &[T], n: usize) -> [Vec<T>; W] {
    core::array::from_fn(|k| v[k * n..(k + 1) * n].to_vec())
}

/// One pitched-copy case: the adjoint identity, `J v` and `Jᵀ w` written out, the primal, and
/// the shadows' sentinels.
fn check_copy<T: Differentiable, const W: usize>(
    form: Form,
    g: &Geom,
    dm: DstMode,
    src_active: bool,
    seed: u64,
) {
    let (nd, ns) = (g.dlen(), g.slen());
    let x: Vec<T> = random_vec(ns, seed);
    let y0: Vec<T> = ramp(nd, 100.0);
    let what = format!("{form:?} {g:?} dst {dm:?} src active {src_active} width {W}");
    // The primal: the box copied, everything else as it was (not run for `DuplicatedOnly`).
    {
        let (mut y, mut dy, mut dx) = (
            y0.clone(),
            core::array::from_fn::<Vec<T>, W, _>(|_| vec![T::zero(); nd]),
            core::array::from_fn::<Vec<T>, W, _>(|_| vec![T::zero(); ns]),
        );
        forward(form, g, dm, src_active, (&mut y, &mut dy), (&x, &mut dx)).unwrap();
        let want = if dm == DstMode::Only {
            y0.clone()
        } else {
            copy_map(g, Some(&x), &y0)
        };
        assert_eq!(y, want, "primal of {what}");
    }
    if dm == DstMode::Const {
        // No output tangent: the source's shadows are neither read into anything nor changed.
        let (mut y, mut dy, mut dx) = (
            y0.clone(),
            [(); W].map(|_| vec![]),
            split(&ramp(ns * W, 7.0), ns),
        );
        let before = dx.clone();
        reverse::<T, W>(form, g, dm, src_active, (&mut y, &mut dy), (&x, &mut dx)).unwrap();
        assert_eq!(dx, before, "{what}");
        return;
    }
    let jvp = |v: &[T]| -> Result<Vec<T>> {
        // v = (v_src lanes, v_dst lanes): the tangents of the inputs (src, old dst).
        let mut dx: [Vec<T>; W] = split(&v[..ns * W], ns);
        let mut dy: [Vec<T>; W] = split(&v[ns * W..], nd);
        let want: Vec<T> = (0..W)
            .flat_map(|k| copy_map(g, src_active.then_some(&dx[k][..]), &dy[k]))
            .collect();
        let mut y = y0.clone();
        forward(form, g, dm, src_active, (&mut y, &mut dy), (&x, &mut dx))?;
        let got = concat(&dy);
        assert_eq!(got, want, "J v of {what}");
        Ok(got)
    };
    let vjp = |w: &[T]| -> Result<Vec<T>> {
        let mut dx: [Vec<T>; W] = core::array::from_fn(|_| vec![T::zero(); ns]);
        let mut dy: [Vec<T>; W] = split(w, nd);
        // Jᵀ w: the source's box receives w's box, the old dst keeps w outside the box.
        let mut want_dx = dx.clone();
        let mut want_dy = dy.clone();
        for k in 0..W {
            for (d, s) in g.elems(g.dst).into_iter().zip(g.elems(g.src)) {
                if src_active {
                    want_dx[k][s] = T::add(want_dx[k][s], dy[k][d]);
                }
                want_dy[k][d] = T::zero();
            }
        }
        let mut y = y0.clone();
        reverse(form, g, dm, src_active, (&mut y, &mut dy), (&x, &mut dx))?;
        assert_eq!((&dx, &dy), (&want_dx, &want_dy), "Jᵀ w of {what}");
        let mut out = concat(&dx);
        out.extend(concat(&dy));
        Ok(out)
    };
    let r = adjoint_check::<T>((ns + nd) * W, nd * W, seed, jvp, vjp).unwrap();
    r.assert_within(0.0);
}

fn copies_for<T: Differentiable>(seed: u64) {
    for (i, g) in shapes_2d().iter().enumerate() {
        for dm in DST_MODES {
            for src_active in [true, false] {
                let s = seed + i as u64;
                check_copy::<T, 1>(Form::Slices2d, g, dm, src_active, s);
                check_copy::<T, 3>(Form::Slices2d, g, dm, src_active, s);
                let mut p = *g;
                (p.dst.off, p.src.off) = (2, 5);
                check_copy::<T, 1>(Form::Pointers2d, &p, dm, src_active, s);
                check_copy::<T, 3>(Form::Pointers2d, &p, dm, src_active, s);
            }
        }
    }
    for (i, g) in shapes_3d().iter().enumerate() {
        for dm in DST_MODES {
            for src_active in [true, false] {
                check_copy::<T, 1>(Form::Slices3d, g, dm, src_active, seed + i as u64);
                check_copy::<T, 3>(Form::Slices3d, g, dm, src_active, seed + i as u64);
            }
        }
    }
}

#[test]
fn pitched_copies_are_adjoint_for_every_activity_and_width() {
    copies_for::<f32>(1);
    copies_for::<f64>(2);
    copies_for::<half::f16>(3);
    copies_for::<half::bf16>(4);
    copies_for::<num_complex::Complex<f32>>(5);
    copies_for::<num_complex::Complex<f64>>(6);
}

/// The map of a memset or a fill: `out = dst` outside the box, `value` inside it.
fn set_map<T: Differentiable>(elems: &[usize], value: T, dst: &[T]) -> Vec<T> {
    let mut out = dst.to_vec();
    for &e in elems {
        out[e] = value;
    }
    out
}

/// Rows of a memset or fill: `h` rows of `w` elements, `row` elements apart, in a buffer with a
/// tail of sentinels.
fn rows(w: usize, h: usize, row: usize) -> (Vec<usize>, usize) {
    let g = Geom {
        w,
        h,
        d: 1,
        dst: Box3 {
            off: 0,
            row,
            slice: h,
        },
        src: Box3 {
            off: 0,
            row,
            slice: h,
        },
    };
    (g.elems(g.dst), g.dlen())
}

const ROWS: [(usize, usize, usize); 4] = [(1, 1, 1), (1, 3, 2), (3, 4, 5), (3, 0, 3)];

fn memsets_for<T: Differentiable, const W: usize>(seed: u64) {
    for (i, &(w, h, row)) in ROWS.iter().enumerate() {
        let (elems, n) = rows(w, h, row);
        let pitch = row * size_of::<T>();
        let seed = seed + i as u64;
        for dm in [DstMode::Dup, DstMode::Only] {
            let y0: Vec<T> = ramp(n, 10.0);
            let run_fwd = |y: &mut Vec<T>, dy: &mut [Vec<T>; W]| match dm {
                DstMode::Only => memset_rows_rule(0, pitch, w, h)
                    .forward(DuplicatedOnly::batch(&mut y[..], lanes(dy))),
                _ => memset_rows_rule(0, pitch, w, h)
                    .forward(Duplicated::batch(&mut y[..], lanes(dy))),
            };
            let run_rev = |y: &mut Vec<T>, dy: &mut [Vec<T>; W]| -> Result<()> {
                let t = memset_rows_rule(0, pitch, w, h)
                    .augmented_primal(Duplicated::batch(&mut y[..], lanes(dy)))?;
                memset_rows_rule(0, pitch, w, h)
                    .reverse(t, Duplicated::batch(&mut y[..], lanes(dy)))
            };
            let jvp = |v: &[T]| -> Result<Vec<T>> {
                let mut dy: [Vec<T>; W] = split(v, n);
                let want: Vec<T> = dy
                    .iter()
                    .flat_map(|d| set_map(&elems, T::zero(), d))
                    .collect();
                let mut y = y0.clone();
                run_fwd(&mut y, &mut dy)?;
                let want_y = if dm == DstMode::Only {
                    y0.clone()
                } else {
                    set_map(&elems, T::zero(), &y0)
                };
                assert_eq!(y, want_y);
                assert_eq!(concat(&dy), want);
                Ok(concat(&dy))
            };
            let vjp = |w: &[T]| -> Result<Vec<T>> {
                let mut dy: [Vec<T>; W] = split(w, n);
                let want: Vec<T> = dy
                    .iter()
                    .flat_map(|d| set_map(&elems, T::zero(), d))
                    .collect();
                let mut y = y0.clone();
                run_rev(&mut y, &mut dy)?;
                assert_eq!(concat(&dy), want);
                Ok(concat(&dy))
            };
            adjoint_check::<T>(n * W, n * W, seed, jvp, vjp)
                .unwrap()
                .assert_within(0.0);
        }
        // Through a raw pointer, with an offset: a run of `w * h` elements from element 2.
        let m = w * h;
        let run: Vec<usize> = (2..2 + m).collect();
        let mut y: Vec<T> = ramp(m + 5, 10.0);
        let mut dy: [Vec<T>; W] = core::array::from_fn(|k| ramp(m + 5, k as f64));
        let (y0, dy0) = (y.clone(), dy.clone());
        unsafe {
            memset_ptr_rule(2, m, 0)
                .forward(Duplicated::batch(y.as_mut_ptr(), lane_ptrs(&mut dy)))
                .unwrap();
        }
        assert_eq!(y, set_map(&run, T::zero(), &y0));
        for k in 0..W {
            assert_eq!(dy[k], set_map(&run, T::zero(), &dy0[k]));
        }
        let mut dy = dy0.clone();
        unsafe {
            let t = memset_ptr_rule(2, m, 0)
                .augmented_primal(Duplicated::batch(y.as_mut_ptr(), lane_ptrs(&mut dy)))
                .unwrap();
            memset_ptr_rule(2, m, 0)
                .reverse(t, Duplicated::batch(y.as_mut_ptr(), lane_ptrs(&mut dy)))
                .unwrap();
        }
        for k in 0..W {
            assert_eq!(dy[k], set_map(&run, T::zero(), &dy0[k]));
        }
    }
}

#[test]
fn memsets_zero_the_shadows_box_and_nothing_else() {
    memsets_for::<f32, 1>(10);
    memsets_for::<f32, 3>(11);
    memsets_for::<f64, 1>(12);
    memsets_for::<num_complex::Complex<f64>, 3>(13);
    memsets_for::<half::f16, 1>(14);
}

/// A fill by value: inputs (the value, the old dst), output the new dst. Forward with
/// `Dual`/`Const`, reverse with `Active`/`Const` (the value's derivative is returned per lane).
fn fills_for<T: Differentiable, const W: usize>(seed: u64) {
    for (i, &(w, h, row)) in ROWS.iter().enumerate() {
        let (elems, n) = rows(w, h, row);
        let pitch = row * size_of::<T>();
        let seed = seed + i as u64;
        let v0: T = random_vec::<T>(1, seed)[0];
        let y0: Vec<T> = ramp(n, 10.0);
        for dm in [DstMode::Dup, DstMode::Only] {
            for active in [true, false] {
                let what = format!("fill rows {w}x{h}/{row} {dm:?} active {active} width {W}");
                let jvp = |v: &[T]| -> Result<Vec<T>> {
                    // v = (the value's tangent per lane, the old dst's tangents).
                    let tangents: [T; W] = core::array::from_fn(|k| v[k]);
                    let mut dy: [Vec<T>; W] = split(&v[W..], n);
                    let want: Vec<T> = (0..W)
                        .flat_map(|k| {
                            let t = if active { tangents[k] } else { T::zero() };
                            set_map(&elems, t, &dy[k])
                        })
                        .collect();
                    let mut y = y0.clone();
                    match (dm, active) {
                        (DstMode::Only, true) => fill_rows_rule(pitch, w, h).forward(
                            DuplicatedOnly::batch(&mut y[..], lanes(&mut dy)),
                            Dual::batch(v0, tangents),
                        ),
                        (DstMode::Only, false) => fill_rows_rule(pitch, w, h)
                            .forward(DuplicatedOnly::batch(&mut y[..], lanes(&mut dy)), Const(v0)),
                        (_, true) => fill_rows_rule(pitch, w, h).forward(
                            Duplicated::batch(&mut y[..], lanes(&mut dy)),
                            Dual::batch(v0, tangents),
                        ),
                        (_, false) => fill_rows_rule(pitch, w, h)
                            .forward(Duplicated::batch(&mut y[..], lanes(&mut dy)), Const(v0)),
                    }?;
                    let want_y = if dm == DstMode::Only {
                        y0.clone()
                    } else {
                        set_map(&elems, v0, &y0)
                    };
                    assert_eq!(y, want_y, "primal of {what}");
                    assert_eq!(concat(&dy), want, "J v of {what}");
                    let mut out = concat(&dy);
                    out.truncate(n * W);
                    Ok(out)
                };
                let vjp = |wv: &[T]| -> Result<Vec<T>> {
                    let mut dy: [Vec<T>; W] = split(wv, n);
                    let want_dv: [T; W] = core::array::from_fn(|k| {
                        let mut s = T::zero();
                        for &e in &elems {
                            s = T::add(s, dy[k][e]);
                        }
                        if active { s } else { T::zero() }
                    });
                    let want_dy: Vec<T> = dy
                        .iter()
                        .flat_map(|d| set_map(&elems, T::zero(), d))
                        .collect();
                    let mut y = y0.clone();
                    let dv: [T; W] = if active {
                        let t = fill_rows_rule(pitch, w, h).augmented_primal(
                            Duplicated::batch(&mut y[..], lanes(&mut dy)),
                            Active(v0),
                        )?;
                        fill_rows_rule(pitch, w, h).reverse(
                            t,
                            Duplicated::batch(&mut y[..], lanes(&mut dy)),
                            Active(v0),
                        )?
                    } else {
                        let t = fill_rows_rule(pitch, w, h).augmented_primal(
                            Duplicated::batch(&mut y[..], lanes(&mut dy)),
                            Const(v0),
                        )?;
                        let () = fill_rows_rule(pitch, w, h).reverse(
                            t,
                            Duplicated::batch(&mut y[..], lanes(&mut dy)),
                            Const(v0),
                        )?;
                        [T::zero(); W]
                    };
                    assert_eq!(dv, want_dv, "d_v of {what}");
                    assert_eq!(concat(&dy), want_dy, "d_dst of {what}");
                    let mut out = dv.to_vec();
                    out.extend(concat(&dy));
                    Ok(out)
                };
                adjoint_check::<T>(W + n * W, n * W, seed, jvp, vjp)
                    .unwrap()
                    .assert_within(0.0);
            }
        }
    }
}

#[test]
fn fills_return_the_sum_of_the_box_per_lane() {
    fills_for::<f32, 1>(20);
    fills_for::<f32, 3>(21);
    fills_for::<f64, 1>(22);
    fills_for::<f64, 3>(23);
    fills_for::<num_complex::Complex<f32>, 3>(24);
}

#[test]
fn fill_of_a_whole_slice_and_through_a_pointer() {
    // Whole slice: d_v = Σ d_y, d_y ← 0.
    let mut y = vec![0.0f64; 5];
    let mut dy = vec![1.0, 2.0, 3.0, 4.0, 5.0];
    let t = fill_all_rule()
        .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Active(2.5))
        .unwrap();
    assert_eq!(y, [2.5; 5]);
    let [dv] = fill_all_rule()
        .reverse(t, Duplicated::new(&mut y[..], &mut dy[..]), Active(2.5))
        .unwrap();
    assert_eq!((dv, dy.as_slice()), (15.0, &[0.0; 5][..]));
    // A `Const` destination has no lane: the value's derivative is an empty array.
    let t = fill_all_rule()
        .augmented_primal(Const(&mut y[..]), Active(1.0))
        .unwrap();
    let none: [f64; 0] = fill_all_rule()
        .reverse(t, Const(&mut y[..]), Active(1.0))
        .unwrap();
    assert_eq!(none, [0.0f64; 0]);
    // Pointer, run of 3 from element 1, width 3: sentinels at 0 and 4.
    let mut y = vec![9.0f32; 5];
    let mut dy: [Vec<f32>; 3] = [vec![1.0; 5], vec![2.0; 5], vec![3.0; 5]];
    unsafe {
        fill_ptr_rule(1, 3)
            .forward(
                Duplicated::batch(y.as_mut_ptr(), lane_ptrs(&mut dy)),
                Dual::batch(4.0, [0.5, 0.25, 0.125]),
            )
            .unwrap();
    }
    assert_eq!(y, [9.0, 4.0, 4.0, 4.0, 9.0]);
    assert_eq!(dy[1], [2.0, 0.25, 0.25, 0.25, 2.0]);
    let dv = unsafe {
        let t = fill_ptr_rule(1, 3)
            .augmented_primal(
                Duplicated::batch(y.as_mut_ptr(), lane_ptrs(&mut dy)),
                Active(4.0),
            )
            .unwrap();
        fill_ptr_rule(1, 3)
            .reverse(
                t,
                Duplicated::batch(y.as_mut_ptr(), lane_ptrs(&mut dy)),
                Active(4.0),
            )
            .unwrap()
    };
    assert_eq!(dv, [1.5, 0.75, 0.375]);
    assert_eq!(dy[2], [3.0, 0.0, 0.0, 0.0, 3.0]);
}

#[test]
fn fill_from_a_value_buffer_accumulates_into_its_shadow() {
    for (w, h, row) in ROWS {
        let (elems, n) = rows(w, h, row);
        let pitch = row * size_of::<f64>();
        let v = [1.5f64];
        let mut y: Vec<f64> = ramp(n, 10.0);
        let y0 = y.clone();
        // Forward: d_y[k][R] ← d_v[k] through the primal itself.
        let mut dv: [Vec<f64>; 3] = [vec![0.5], vec![0.25], vec![-1.0]];
        let mut dy: [Vec<f64>; 3] = core::array::from_fn(|k| ramp(n, k as f64));
        let dy0 = dy.clone();
        fill_rows_from_rule(pitch, w, h)
            .forward(
                Duplicated::batch(&mut y[..], lanes(&mut dy)),
                Duplicated::batch(&v[..], lanes(&mut dv)),
            )
            .unwrap();
        assert_eq!(y, set_map(&elems, 1.5, &y0));
        for k in 0..3 {
            assert_eq!(dy[k], set_map(&elems, dv[k][0], &dy0[k]));
        }
        // Const value: the shadows' boxes are zeroed.
        let mut dy = dy0.clone();
        fill_rows_from_rule(pitch, w, h)
            .forward(Duplicated::batch(&mut y[..], lanes(&mut dy)), Const(&v[..]))
            .unwrap();
        assert_eq!(dy[2], set_map(&elems, 0.0, &dy0[2]));
        // Reverse: d_v[k] += Σ_R d_y[k], then d_y[k][R] ← 0.
        let mut dy = dy0.clone();
        let mut dv: [Vec<f64>; 3] = [vec![1.0], vec![2.0], vec![3.0]];
        let t = fill_rows_from_rule(pitch, w, h)
            .augmented_primal(
                Duplicated::batch(&mut y[..], lanes(&mut dy)),
                Duplicated::batch(&v[..], lanes(&mut dv)),
            )
            .unwrap();
        fill_rows_from_rule(pitch, w, h)
            .reverse(
                t,
                Duplicated::batch(&mut y[..], lanes(&mut dy)),
                Duplicated::batch(&v[..], lanes(&mut dv)),
            )
            .unwrap();
        for k in 0..3 {
            let s: f64 = elems.iter().map(|&e| dy0[k][e]).sum();
            assert_eq!(dv[k][0], (k + 1) as f64 + s);
            assert_eq!(dy[k], set_map(&elems, 0.0, &dy0[k]));
        }
        // A value buffer of another length is refused before anything is written.
        let two = [1.0f64, 2.0];
        let mut dy = dy0.clone();
        let e = fill_rows_from_rule(pitch, w, h)
            .forward(
                Duplicated::batch(&mut y[..], lanes(&mut dy)),
                Const(&two[..]),
            )
            .unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
        assert_eq!(dy, dy0);
    }
}

#[test]
fn restore_writes_the_old_destination_back_after_the_shadow_work() {
    // A copy: y is overwritten by x, the reverse moves dy into dx and restores y.
    let x = [1.0f32, 2.0, 3.0];
    let mut y = [7.0f32, 8.0, 9.0];
    let (mut dx, mut dy) = ([0.0f32; 3], [0.5f32, 0.25, 0.125]);
    let t = copy_restoring_rule()
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert!(t.restores());
    assert_eq!(y, x);
    copy_restoring_rule()
        .reverse(
            t,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert_eq!((y, dx, dy), ([7.0, 8.0, 9.0], [0.5, 0.25, 0.125], [0.0; 3]));
    // A pitched copy: only the box comes back; padding was never written.
    let g = shapes_2d()[2];
    let (dp, sp) = (g.pitch::<f32>(g.dst), g.pitch::<f32>(g.src));
    let x: Vec<f32> = ramp(g.slen(), 1.0);
    let y0: Vec<f32> = ramp(g.dlen(), 50.0);
    let mut y = y0.clone();
    let (mut dx, mut dy) = (vec![0.0f32; g.slen()], vec![1.0f32; g.dlen()]);
    let t = copy2d_restoring_rule(dp, sp, g.w, g.h)
        .augmented_primal(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert_eq!(y, copy_map(&g, Some(&x), &y0));
    copy2d_restoring_rule(dp, sp, g.w, g.h)
        .reverse(
            t,
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(&x[..], &mut dx[..]),
        )
        .unwrap();
    assert_eq!(y, y0);
    // `DuplicatedOnly`: the primal never ran, so nothing is saved or restored.
    let t = copy_restoring_rule()
        .augmented_primal(
            DuplicatedOnly::new(&mut y[..3], &mut dy[..3]),
            Const(&x[..3]),
        )
        .unwrap();
    assert!(!t.restores());
    // Without `restore` the tape holds no box.
    let t = copy2d_host_rule(dp, sp, g.w, g.h)
        .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))
        .unwrap();
    assert!(!t.restores());
}

#[test]
fn bad_boxes_are_typed_errors_before_any_write() {
    let g = shapes_2d()[2];
    let x: Vec<f32> = ramp(g.slen(), 1.0);
    let y0: Vec<f32> = ramp(g.dlen(), 50.0);
    let mut y = y0.clone();
    let mut dy: [Vec<f32>; 3] = core::array::from_fn(|k| ramp(g.dlen(), k as f64));
    let dy0 = dy.clone();
    let sp = g.pitch::<f32>(g.src);
    // A pitch that is not a multiple of the element size, a row longer than the pitch, a box
    // beyond the buffer: each refused, nothing written.
    for (dp, w, h) in [
        (18, g.w, g.h),
        (8, g.w, g.h),
        (g.pitch::<f32>(g.dst), g.w, g.h + 50),
    ] {
        let e = copy2d_host_rule(dp, sp, w, h)
            .forward(Duplicated::batch(&mut y[..], lanes(&mut dy)), Const(&x[..]))
            .unwrap_err();
        assert!(matches!(e, Error::BadRegion { .. }), "{e}");
        assert_eq!((&y, &dy), (&y0, &dy0));
    }
    // A lane whose shadow is too short (a shadow has its primal's length, as for a plain copy)
    // fails before lane 0 is written.
    dy[2].truncate(3);
    let dy0 = dy.clone();
    let e = copy2d_host_rule(g.pitch::<f32>(g.dst), sp, g.w, g.h)
        .forward(Duplicated::batch(&mut y[..], lanes(&mut dy)), Const(&x[..]))
        .unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    assert_eq!((&y, &dy), (&y0, &dy0));
}

#[test]
fn overlap_is_judged_row_by_row_and_a_self_copy_is_the_identity() {
    // Two interleaved boxes of one buffer (rows of 2 every 4 elements, at 0 and at 2): disjoint
    // row by row although their bounding ranges overlap.
    let mut buf: Vec<f64> = ramp(16, 1.0);
    let mut dbuf: Vec<f64> = ramp(16, 100.0);
    let (p, dp) = (buf.as_mut_ptr(), dbuf.as_mut_ptr());
    let pitch = 4 * size_of::<f64>();
    let before = (buf.clone(), dbuf.clone());
    unsafe {
        let src = Duplicated::new(p as *const f64, dp);
        let t = copy2d_ptr_rule(2, 0, pitch, pitch, 2, 4)
            .augmented_primal(Duplicated::new(p, dp), src)
            .unwrap();
        let src = Duplicated::new(p as *const f64, dp);
        copy2d_ptr_rule(2, 0, pitch, pitch, 2, 4)
            .reverse(t, Duplicated::new(p, dp), src)
            .unwrap();
    }
    for r in 0..4 {
        // The primal moved each row's first pair onto its second; the reverse moved the
        // cotangent of the second pair onto the first and zeroed the second.
        assert_eq!(buf[4 * r + 2..4 * r + 4], before.0[4 * r..4 * r + 2]);
        let want = [
            before.1[4 * r] + before.1[4 * r + 2],
            before.1[4 * r + 1] + before.1[4 * r + 3],
        ];
        assert_eq!(dbuf[4 * r..4 * r + 2], want);
        assert_eq!(dbuf[4 * r + 2..4 * r + 4], [0.0, 0.0]);
    }
    // A box sharing part of a row with the other: refused, nothing written.
    let before = (buf.clone(), dbuf.clone());
    let e = unsafe {
        let src = Duplicated::new(p as *const f64, dp);
        copy2d_ptr_rule(1, 0, pitch, pitch, 2, 4)
            .forward(Duplicated::new(p, dp), src)
            .unwrap_err()
    };
    assert!(matches!(e, Error::PartialOverlap { .. }), "{e}");
    assert_eq!((&buf, &dbuf), (&before.0, &before.1));
    // The same box of the same memory: the identity, forward and reverse.
    unsafe {
        let src = Duplicated::new(p as *const f64, dp);
        copy2d_ptr_rule(1, 1, pitch, pitch, 2, 4)
            .forward(Duplicated::new(p, dp), src)
            .unwrap();
        let src = Duplicated::new(p as *const f64, dp);
        let t = copy2d_ptr_rule(1, 1, pitch, pitch, 2, 4)
            .augmented_primal(Duplicated::new(p, dp), src)
            .unwrap();
        assert!(!t.primal_ran());
        let src = Duplicated::new(p as *const f64, dp);
        copy2d_ptr_rule(1, 1, pitch, pitch, 2, 4)
            .reverse(t, Duplicated::new(p, dp), src)
            .unwrap();
    }
    assert_eq!((&buf, &dbuf), (&before.0, &before.1));
}

#[test]
fn a_tape_serves_only_its_own_call() {
    let g = shapes_2d()[2];
    let (dp, sp) = (g.pitch::<f32>(g.dst), g.pitch::<f32>(g.src));
    let x: Vec<f32> = ramp(g.slen(), 1.0);
    let mut y: Vec<f32> = ramp(g.dlen(), 50.0);
    let mut dy = vec![1.0f32; g.dlen()];
    let t = copy2d_host_rule(dp, sp, g.w, g.h)
        .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))
        .unwrap();
    let dy0 = dy.clone();
    let e = copy2d_host_rule(dp, sp, g.w, g.h - 1)
        .reverse(t, Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))
        .unwrap_err();
    assert!(matches!(e, Error::TapeMismatch(_)), "{e}");
    assert_eq!(dy, dy0);
}

#[test]
fn finite_differences_through_region_rules() {
    // g(x, v) = y ⊙ y where y = fill of v over rows of a copy2d of x: J (dx, dv) = 2 y ⊙ J_y.
    let g = shapes_2d()[2];
    let (dp, sp) = (g.pitch::<f64>(g.dst), g.pitch::<f64>(g.src));
    let (ns, nd) = (g.slen(), g.dlen());
    let (elems, _) = rows(2, 2, g.dst.row);
    let through = |xv: &[f64], d: &[f64]| -> Result<(Vec<f64>, Vec<f64>)> {
        let (x, v) = (&xv[..ns], xv[ns]);
        let (dx, dv) = (&d[..ns], d[ns]);
        let (mut y, mut dy) = (vec![0.25; nd], vec![0.0; nd]);
        let mut dx = dx.to_vec();
        copy2d_host_rule(dp, sp, g.w, g.h).forward(
            Duplicated::new(&mut y[..], &mut dy[..]),
            Duplicated::new(x, &mut dx[..]),
        )?;
        fill_rows_rule(dp, 2, 2)
            .forward(Duplicated::new(&mut y[..], &mut dy[..]), Dual::new(v, dv))?;
        let _ = &elems;
        Ok((y, dy))
    };
    let f = |xv: &[f64]| -> Result<Vec<f64>> {
        let (y, _) = through(xv, &vec![0.0; ns + 1])?;
        Ok(y.iter().map(|a| a * a).collect())
    };
    let jvp = |xv: &[f64], d: &[f64]| -> Result<Vec<f64>> {
        let (y, dy) = through(xv, d)?;
        Ok(y.iter().zip(&dy).map(|(a, b)| 2.0 * a * b).collect())
    };
    let x: Vec<f64> = random_vec(ns + 1, 9);
    let r = finite_difference_check(&x, 10, 1e-4, f, jvp).unwrap();
    r.assert_within(1e-9);
    assert!(r.rhs > 0.0, "{r:?}");
}
