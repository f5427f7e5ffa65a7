//! Primitives written the way users write them, accepted by the macro, each run through the
//! one-call check of `rules_runtime::testing` on host memory and, with `--features checked`,
//! through the checked mode: a wrong one must be reported by at least one of them, a right one
//! pass both. Every test asserts the outcome (the `P` numbers label the primitives; those the
//! macro refuses are in `ui-tests/compile_fail/natural/`).
//!
//! `cargo test -p rules-tests --test natural_forms -- --nocapture` and
//! `cargo test -p rules-tests --features checked --test natural_forms -- --nocapture`.
// The forms under test are users': `&Vec` buffers, `vec!` where an array would do.
#![allow(clippy::needless_range_loop, clippy::ptr_arg, clippy::useless_vec)]

use rules_runtime::prelude::*;
use rules_runtime::testing::{
    Check, CheckError, Report, Shapes, check_copy, check_fill, check_memset, check_raw_copy,
    check_raw_memset, check_region,
};
use rules_runtime::{Differentiable, Error};
use std::sync::atomic::{AtomicUsize, Ordering};

type Real = f32;

/// The names of the checks that failed (deduplicated, in order), or the run error.
fn what(r: &Result<Report, CheckError>) -> String {
    match r {
        Ok(rep) => format!("PASS footprint={:?}", rep.footprint),
        Err(CheckError::Run { during, error }) => format!("RUN-ERROR during {during}: {error:?}"),
        Err(e) => {
            let mut v: Vec<&str> = Vec::new();
            for f in e.failures() {
                if !v.contains(&f.check.name()) {
                    v.push(f.check.name());
                }
            }
            format!("FAIL {v:?}\n    first: {}", e.failures()[0])
        }
    }
}

fn show(name: &str, r: &Result<Report, CheckError>) {
    eprintln!("{name}: {}", what(r));
}

fn checked() -> bool {
    cfg!(feature = "checked")
}

/// Whether `r` failed (in either mode) with `check`, or, in checked mode, with PrimalDisagrees.
fn caught(r: &Result<Report, CheckError>, check: Check) -> bool {
    match r {
        Err(e) if e.failed(check) => true,
        Err(CheckError::Run {
            error: Error::PrimalDisagrees(_),
            ..
        }) => checked(),
        _ => false,
    }
}

fn is_disagree<T>(r: &Result<T, Error>) -> bool {
    matches!(r, Err(Error::PrimalDisagrees(_)))
}

fn direct<T>(name: &str, r: &Result<T, Error>) {
    match r {
        Ok(_) => eprintln!("{name} direct: Ok"),
        Err(e) => eprintln!("{name} direct: Err {e}"),
    }
}

// =============================================================================================
// P01-P03: a memset given a float value through an alias or a generic: refused at compile time
// (`ui-tests/compile_fail/natural/memset_values.rs`); before, its value's derivative was dropped
// with no error. Written as the fill it is, the same primitive returns d_v.
// =============================================================================================

#[test]
fn p01_a_float_memset_written_as_a_fill_returns_its_values_derivative() {
    let v = 0.75f32;
    let (mut y, mut dy) = (vec![0.0f32; 4], vec![1.0f32; 4]);
    let tape = p01_as_fill_rule()
        .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Active(v))
        .unwrap();
    let [dv] = p01_as_fill_rule()
        .reverse(tape, Duplicated::new(&mut y[..], &mut dy[..]), Active(v))
        .unwrap();
    assert_eq!(dv, 4.0);
    assert_eq!(y, [0.75; 4]);
}

/// P01 as the fill it is.
#[derivative_rule(fill)]
pub fn p01_as_fill(#[dst] dst: &mut [f32], #[value] v: Real) {
    dst.fill(v);
}

// =============================================================================================
// P04-P05: what chooses the elements without being a parameter the macro reads.
// =============================================================================================

/// P04: a static chooses the prefix copied (a const generic does not compile:
/// ui-tests/compile_fail/natural/).
static K: AtomicUsize = AtomicUsize::new(3);
#[derivative_rule(copy)]
pub fn p04_static_k(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    let k = K.load(Ordering::SeqCst);
    dst[..k].copy_from_slice(&src[..k]);
}

/// P05: a mode string (labels pass unmarked, by design) that chooses the elements.
#[derivative_rule(copy)]
pub fn p05_mode(#[dst] dst: &mut [f32], #[src] src: &[f32], mode: &str) {
    if mode == "half" {
        let k = dst.len() / 2;
        dst[..k].copy_from_slice(&src[..k]);
    } else {
        dst.copy_from_slice(src);
    }
}

#[test]
fn p04_p05_hidden_choosers_are_caught() {
    let r = check_copy(&mut p04_static_k_rule(), Shapes::len(8));
    show("P04 static K", &r);
    assert!(caught(&r, Check::Footprint) || caught(&r, Check::DotProduct));
    let r = check_copy(&mut p05_mode_rule("half"), Shapes::len(8));
    show("P05 mode half", &r);
    assert!(caught(&r, Check::Footprint) || caught(&r, Check::DotProduct));
    let r = check_copy(&mut p05_mode_rule("all"), Shapes::len(8));
    show("P05 mode all", &r);
    assert!(r.is_ok());
    let x = vec![1.0f32; 8];
    let (mut y, mut dy) = (vec![0.0f32; 8], vec![0.0f32; 8]);
    let r = p04_static_k_rule().forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]));
    direct("P04", &r);
    assert_eq!(is_disagree(&r), checked());
}

// =============================================================================================
// P06: a fill from a host one-element buffer that reads the wrong element.
// =============================================================================================

/// P06: a fill "from a one-element buffer" that reads v[1].
#[derivative_rule(fill)]
pub fn p06_fill_buf_second(#[dst] dst: &mut [f32], #[value] v: &[f32]) {
    dst.fill(v[v.len() - 1]);
}

#[test]
fn p06_fill_from_a_longer_value_buffer() {
    let r = check_region(&mut p06_fill_buf_second_rule(), Shapes::lens(5, 1));
    show("P06 fill buf len 1", &r);
    assert!(r.is_ok());
    let r = check_region(&mut p06_fill_buf_second_rule(), Shapes::lens(5, 2));
    show("P06 fill buf len 2", &r);
    let v = vec![0.5f32, 0.25];
    let (mut y, mut dy, mut dv) = (vec![0.0f32; 3], vec![0.0f32; 3], vec![1.0f32, 2.0]);
    let r = p06_fill_buf_second_rule().forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Duplicated::new(&v[..], &mut dv[..]),
    );
    direct("P06 value buffer of 2", &r);
    eprintln!("P06 y={y:?} dy={dy:?} (true dy = dv[1] = 2)");
    assert!(r.is_err(), "a 2-element value buffer must be refused");
}

// =============================================================================================
// P07: a fixed-size array buffer.
// =============================================================================================

/// P07: copies between `[f32; 8]` arrays.
#[derivative_rule(copy)]
pub fn p07_array(#[dst] dst: &mut [f32; 4], #[src] src: &[f32; 4]) {
    *dst = *src;
}

#[test]
fn p07_array_buffers() {
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let (mut y, mut dy, mut dx) = ([0.0f32; 4], [1.0f32; 4], [0.5f32; 4]);
    let tape = p07_array_rule()
        .augmented_primal(
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    p07_array_rule()
        .reverse(
            tape,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
    assert_eq!((y, dy, dx), (x, [0.0; 4], [1.5; 4]));
}

// =============================================================================================
// P08-P11: `#[inert]` on what is not inert (a user lying), and on what is.
// =============================================================================================

/// P08: an offset marked inert.
#[derivative_rule(copy)]
pub fn p08_inert_offset(#[dst] dst: &mut [f32], #[src] src: &[f32], #[inert] off: usize) {
    let n = dst.len();
    dst[off..].copy_from_slice(&src[..n - off]);
}

/// P09: a scale marked inert.
#[derivative_rule(copy)]
pub fn p09_inert_scale(#[dst] dst: &mut [f32], #[src] src: &[f32], #[inert] by: f32) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = by * s;
    }
}

/// P10: a flag marked inert.
#[derivative_rule(copy)]
pub fn p10_inert_flag(#[dst] dst: &mut [f32], #[src] src: &[f32], #[inert] skip_last: bool) {
    let n = dst.len() - usize::from(skip_last);
    dst[..n].copy_from_slice(&src[..n]);
}

/// P11: a chunk size, truly inert.
#[derivative_rule(copy)]
pub fn p11_chunked(#[dst] dst: &mut [f32], #[src] src: &[f32], #[inert] chunk: usize) {
    for (d, s) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
        d.copy_from_slice(s);
    }
}

#[test]
fn p08_p11_inert_lies_are_caught_and_truth_passes() {
    let r = check_copy(&mut p08_inert_offset_rule(2), Shapes::len(8));
    show("P08 inert offset 2", &r);
    assert!(caught(&r, Check::Footprint));
    let r = check_copy(&mut p09_inert_scale_rule(2.0), Shapes::len(8));
    show("P09 inert scale 2", &r);
    assert!(caught(&r, Check::DotProduct));
    let r = check_copy(&mut p09_inert_scale_rule(1.0), Shapes::len(8));
    show("P09 inert scale 1", &r);
    assert!(r.is_ok());
    let r = check_copy(&mut p10_inert_flag_rule(true), Shapes::len(8));
    show("P10 inert flag true", &r);
    assert!(caught(&r, Check::Footprint));
    let r = check_copy(&mut p11_chunked_rule(3), Shapes::len(8));
    show("P11 chunked 3", &r);
    assert!(r.is_ok());
}

// =============================================================================================
// P12-P15: memsets that are not one pattern over the whole buffer.
// =============================================================================================

/// P12: zeroes every other element.
#[derivative_rule(memset)]
pub fn p12_memset_strided(#[dst] dst: &mut [f32]) {
    for v in dst.iter_mut().step_by(2) {
        *v = 0.0;
    }
}

/// P13: broadcasts the first element over the buffer (one repeated pattern, read from dst).
#[derivative_rule(memset)]
pub fn p13_memset_broadcast(#[dst] dst: &mut [f32]) {
    let a = dst[0];
    dst.fill(a);
}

/// P14: halves every element in place.
#[derivative_rule(memset)]
pub fn p14_memset_scale(#[dst] dst: &mut [f32]) {
    for v in dst.iter_mut() {
        *v *= 0.5;
    }
}

/// P15: writes 0, 1, 2, ... (constants: the derivative is zero, as the rule says).
#[derivative_rule(memset)]
pub fn p15_memset_iota(#[dst] dst: &mut [f32]) {
    for (i, v) in dst.iter_mut().enumerate() {
        *v = i as f32;
    }
}

/// P15b: the memset's pattern given as `u32` bits that the body writes as a number.
#[derivative_rule(memset)]
pub fn p15b_memset_u32_number(#[dst] dst: &mut [f32], #[value] v: u32) {
    dst.fill(v as f32);
}

/// P15c: a real 0xFF memset of half the buffer with its bit pattern given.
#[derivative_rule(memset)]
pub fn p15c_memset_half_bits(#[dst] dst: &mut [f32], #[value] bits: u32) {
    let k = dst.len() / 2;
    dst[..k].fill(f32::from_bits(bits));
}

#[test]
fn p12_p15_memsets() {
    let r = check_memset(&mut p12_memset_strided_rule(), Shapes::len(6));
    show("P12 memset strided", &r);
    assert!(caught(&r, Check::Footprint));
    let r = check_memset(&mut p13_memset_broadcast_rule(), Shapes::len(6));
    show("P13 memset broadcast dst[0]", &r);
    let r13 = r;
    let r = check_memset(&mut p14_memset_scale_rule(), Shapes::len(6));
    show("P14 memset scale", &r);
    assert!(caught(&r, Check::FiniteDifferences));
    let r = check_memset(&mut p15_memset_iota_rule(), Shapes::len(6));
    show("P15 memset iota", &r);
    let r15 = r;
    let r = check_memset(&mut p15b_memset_u32_number_rule(3), Shapes::len(6));
    show("P15b memset u32 as number", &r);
    assert!(r.is_ok());
    let r = check_memset(&mut p15c_memset_half_bits_rule(0xFFFF_FFFF), Shapes::len(6));
    show("P15c memset half, bits", &r);
    assert!(caught(&r, Check::Footprint));
    // Checked mode on P13 (the broadcast: one pattern, so it agrees) and P15 (iota).
    let (mut y, mut dy) = (vec![0.5f32, 1.0, 2.0], vec![1.0f32; 3]);
    let r = p13_memset_broadcast_rule().forward(Duplicated::new(&mut y[..], &mut dy[..]));
    direct("P13", &r);
    assert!(r.is_ok(), "checked mode sees one repeated pattern");
    let (mut y, mut dy) = (vec![0.5f32, 1.0, 2.0], vec![1.0f32; 3]);
    let r = p15_memset_iota_rule().forward(Duplicated::new(&mut y[..], &mut dy[..]));
    direct("P15", &r);
    assert_eq!(is_disagree(&r), checked());
    eprintln!(
        "P13 one-call caught FD: {}",
        caught(&r13, Check::FiniteDifferences)
    );
    eprintln!("P15 one-call ok: {}", r15.is_ok());
    assert!(caught(&r13, Check::FiniteDifferences));
    assert_eq!(r15.is_ok(), !checked());
}

// =============================================================================================
// P16-P21: fills of a computed value, partial fills, fills that skip.
// =============================================================================================

#[derivative_rule(fill)]
pub fn p16_fill_square(#[dst] dst: &mut [f64], #[value] v: f64) {
    dst.fill(v * v);
}
#[derivative_rule(fill)]
pub fn p17_fill_neg(#[dst] dst: &mut [f64], #[value] v: f64) {
    dst.fill(-v);
}
#[derivative_rule(fill)]
pub fn p18_fill_abs(#[dst] dst: &mut [f64], #[value] v: f64) {
    dst.fill(v.abs());
}
/// Derivative right (d/dv (v + 1) = 1), primal not the value.
#[derivative_rule(fill)]
pub fn p19_fill_plus_one(#[dst] dst: &mut [f64], #[value] v: f64) {
    dst.fill(v + 1.0);
}
#[derivative_rule(fill)]
pub fn p20_fill_tail(#[dst] dst: &mut [f64], #[value] v: f64) {
    dst[1..].fill(v);
}
/// Skips the write when the value is zero (an "optimisation").
#[derivative_rule(fill)]
pub fn p21_fill_skip_zero(#[dst] dst: &mut [f64], #[value] v: f64) {
    if v != 0.0 {
        dst.fill(v);
    }
}
/// A fill scaled by an inert-marked factor (a lie).
#[derivative_rule(fill)]
pub fn p21b_fill_inert_scale(#[dst] dst: &mut [f64], #[value] v: f64, #[inert] k: f64) {
    dst.fill(k * v);
}

#[test]
fn p16_p21_fills() {
    for seed in [1u64, 2, 3] {
        let s = Shapes::len(5).seed(seed);
        let r = check_fill(&mut p16_fill_square_rule(), s);
        show(&format!("P16 fill v*v seed {seed}"), &r);
        let r = check_fill(&mut p17_fill_neg_rule(), s);
        show(&format!("P17 fill -v seed {seed}"), &r);
        assert!(caught(&r, Check::FiniteDifferences));
        let r = check_fill(&mut p18_fill_abs_rule(), s);
        show(&format!("P18 fill |v| seed {seed}"), &r);
        let r = check_fill(&mut p19_fill_plus_one_rule(), s);
        show(&format!("P19 fill v+1 seed {seed}"), &r);
        let r = check_fill(&mut p20_fill_tail_rule(), s);
        show(&format!("P20 fill tail seed {seed}"), &r);
        assert!(caught(&r, Check::Footprint));
        let r = check_fill(&mut p21_fill_skip_zero_rule(), s);
        show(&format!("P21 fill skip zero seed {seed}"), &r);
        let r = check_fill(&mut p21b_fill_inert_scale_rule(3.0), s);
        show(&format!("P21b fill inert k seed {seed}"), &r);
        assert!(caught(&r, Check::FiniteDifferences));
    }
    // Checked mode, direct: v*v at v = 0.5 and |v| at v = 0.5 / -0.5, and v = 0 skipped.
    let mut y = vec![0.0f64; 3];
    let mut dy = vec![0.0f64; 3];
    let r = p16_fill_square_rule().forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Dual::new(0.5, 1.0),
    );
    direct("P16 v=0.5", &r);
    assert_eq!(is_disagree(&r), checked());
    let r = p18_fill_abs_rule().forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Dual::new(0.5, 1.0),
    );
    direct("P18 v=0.5", &r);
    assert!(r.is_ok());
    let r = p18_fill_abs_rule().forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Dual::new(-0.5, 1.0),
    );
    direct("P18 v=-0.5", &r);
    assert_eq!(is_disagree(&r), checked());
    let mut y = vec![3.0f64; 3];
    let r = p21_fill_skip_zero_rule().forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Dual::new(0.0, 1.0),
    );
    direct("P21 v=0 over 3.0", &r);
    assert_eq!(is_disagree(&r), checked());
    let r = p19_fill_plus_one_rule().forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Dual::new(0.0, 1.0),
    );
    direct("P19 v=0", &r);
    assert_eq!(is_disagree(&r), checked());
}

// =============================================================================================
// P22-P25: copies that accumulate, write twice, slice inside the body, convert.
// =============================================================================================

/// P22: accumulates instead of copying.
#[derivative_rule(copy)]
pub fn p22_accumulate(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d += *s;
    }
}

/// P23: writes twice (zero, then the copy): right.
#[derivative_rule(copy)]
pub fn p23_twice(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.fill(0.0);
    dst.copy_from_slice(src);
}

/// P24: copies `min(len)` elements, slicing inside the body.
#[derivative_rule(copy)]
pub fn p24_min_len(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    let k = dst.len().min(src.len());
    dst[..k].copy_from_slice(&src[..k]);
}

/// P25: conjugates complex elements.
#[derivative_rule(copy)]
pub fn p25_conj(
    #[dst] dst: &mut [num_complex::Complex<f64>],
    #[src] src: &[num_complex::Complex<f64>],
) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.conj();
    }
}

/// P25b: clamps to [-10, 10] (the identity on every value a test or this program sees).
#[derivative_rule(copy)]
pub fn p25b_clamp(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.clamp(-10.0, 10.0);
    }
}

/// P25c: skips zeros ("sparse" copy).
#[derivative_rule(copy)]
pub fn p25c_skip_zeros(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        if *s != 0.0 {
            *d = *s;
        }
    }
}

#[test]
fn p22_p25_copies() {
    let r = check_copy(&mut p22_accumulate_rule(), Shapes::len(8));
    show("P22 accumulate", &r);
    assert!(r.is_err());
    let r = check_copy(&mut p23_twice_rule(), Shapes::len(8));
    show("P23 twice", &r);
    assert!(r.is_ok());
    let r = check_copy(&mut p24_min_len_rule(), Shapes::lens(8, 5));
    show("P24 min len 8/5", &r);
    assert!(matches!(
        r,
        Err(CheckError::Run {
            error: Error::LengthMismatch { .. },
            ..
        })
    ));
    let r = check_copy(&mut p24_min_len_rule(), Shapes::len(8));
    show("P24 min len 8/8", &r);
    assert!(r.is_ok());
    let r = check_copy(&mut p25_conj_rule(), Shapes::len(8));
    show("P25 conj", &r);
    assert!(caught(&r, Check::DotProduct));
    let r = check_copy(&mut p25b_clamp_rule(), Shapes::len(8));
    show("P25b clamp10", &r);
    assert!(r.is_ok());
    let r = check_copy(&mut p25c_skip_zeros_rule(), Shapes::len(64));
    show("P25c skip zeros", &r);
    assert!(r.is_err());
    let x = vec![1.0f32, 0.0, 2.0];
    let (mut y, mut dy) = (vec![5.0f32; 3], vec![0.0f32; 3]);
    let r = p25c_skip_zeros_rule().forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]));
    direct("P25c", &r);
    assert_eq!(is_disagree(&r), checked());
    let x = vec![1.0f32, 20.0, 2.0];
    let r = p25b_clamp_rule().forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]));
    direct("P25b 20.0", &r);
    assert_eq!(is_disagree(&r), checked());
}

// =============================================================================================
// P26-P29: pitched copies: pitches in elements, an extra row, the padding copied, 3D slices.
// =============================================================================================

/// P26: treats the pitches as elements, not bytes.
#[derivative_rule(copy2d)]
pub fn p26_pitch_elems(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) {
    for r in 0..h {
        dst[r * dp..r * dp + w].copy_from_slice(&src[r * sp..r * sp + w]);
    }
}

/// P27: one row too many (`0..=h`).
#[derivative_rule(copy2d)]
pub fn p27_extra_row(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) {
    for r in 0..=h {
        let (d, s) = (r * dp / 4, r * sp / 4);
        dst[d..d + w].copy_from_slice(&src[s..s + w]);
    }
}

/// P28: copies whole pitches (the padding too), as one memcpy of h * pitch bytes.
#[derivative_rule(copy2d)]
pub fn p28_whole_pitch(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) {
    let _ = (sp, w);
    let n = h * dp / 4;
    dst[..n].copy_from_slice(&src[..n]);
}

/// P29: a 3D copy that reads the slice heights as elements per slice instead of rows.
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy3d)]
pub fn p29_slice_elems(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
    #[dst_slice_height] dsh: usize,
    #[src_slice_height] ssh: usize,
    #[width] w: usize,
    #[height] h: usize,
    #[depth] d: usize,
) {
    for z in 0..d {
        for y in 0..h {
            let di = z * dsh + y * dp / 4;
            let si = z * ssh + y * sp / 4;
            dst[di..di + w].copy_from_slice(&src[si..si + w]);
        }
    }
}

#[test]
fn p26_p29_pitched() {
    // Rows of 2 elements, the user's pitch 4 meant as 4 elements (16 bytes): the rule reads 4 bytes.
    let r = check_region(&mut p26_pitch_elems_rule(4, 4, 2, 3), Shapes::len(12));
    show("P26 pitch in elements (4)", &r);
    assert!(matches!(
        r,
        Err(CheckError::Run {
            error: Error::BadRegion { .. },
            ..
        })
    ));
    // Pitch 16 meant as bytes by the caller but read as elements by the body.
    let r = check_region(&mut p26_pitch_elems_rule(16, 16, 2, 2), Shapes::len(20));
    show("P26 pitch 16 read as elements", &r);
    assert!(caught(&r, Check::Footprint));
    let r = check_region(&mut p27_extra_row_rule(16, 16, 2, 2), Shapes::len(12));
    show("P27 extra row", &r);
    assert!(caught(&r, Check::Footprint));
    let r = check_region(&mut p28_whole_pitch_rule(16, 16, 2, 3), Shapes::len(12));
    show("P28 whole pitch", &r);
    assert!(caught(&r, Check::Footprint));
    // 2 slices of 2 rows of 2, pitch 3 elements, slice height 3 rows (rule) vs 3 elements (body).
    let r = check_region(
        &mut p29_slice_elems_rule(12, 12, 3, 3, 2, 2, 2),
        Shapes::len(18),
    );
    show("P29 slice height as elements", &r);
    assert!(caught(&r, Check::Footprint));
    // Checked mode, direct: P27 and P28 write only outside the box, P29 inside.
    let x: Vec<f32> = (1..=12).map(|i| i as f32).collect();
    let (mut y, mut dy) = (vec![0.0f32; 12], vec![0.0f32; 12]);
    let r = p27_extra_row_rule(16, 16, 2, 2)
        .forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]));
    direct("P27", &r);
    assert!(r.is_ok(), "outside the box: documented as not checked");
    let r = p28_whole_pitch_rule(16, 16, 2, 3)
        .forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]));
    direct("P28", &r);
    assert!(r.is_ok(), "outside the box: documented as not checked");
}

// =============================================================================================
// P30-P31: `Vec` destinations that reallocate or grow.
// =============================================================================================

/// P30: assigns a fresh Vec (a reallocation; same values).
#[derivative_rule(copy)]
pub fn p30_vec_assign(#[dst] dst: &mut Vec<f32>, #[src] src: &Vec<f32>) {
    *dst = src.clone();
}

/// P31: appends instead of copying.
#[derivative_rule(copy)]
pub fn p31_vec_extend(#[dst] dst: &mut Vec<f32>, #[src] src: &Vec<f32>) {
    dst.extend_from_slice(src);
}

/// P31b: clears and pushes (reallocates when shrunk to fit first).
#[derivative_rule(copy)]
pub fn p31b_vec_shrink_push(#[dst] dst: &mut Vec<f32>, #[src] src: &Vec<f32>) {
    dst.clear();
    dst.shrink_to_fit();
    for s in src {
        dst.push(*s);
    }
}

/// Whether `e` is the refusal of a primitive that moved or resized its destination.
fn moved(e: &Error) -> bool {
    matches!(e, Error::Primal(p) if p.to_string().contains("moved or resized"))
}

#[test]
fn p30_p31_vecs_that_move_or_resize_are_refused_at_the_call() {
    for (name, r) in [
        (
            "P30 vec assign",
            check_copy::<Vec<f32>, Vec<f32>, _>(&mut p30_vec_assign_rule(), Shapes::len(8)),
        ),
        (
            "P31 vec extend",
            check_copy::<Vec<f32>, Vec<f32>, _>(&mut p31_vec_extend_rule(), Shapes::len(8)),
        ),
    ] {
        show(name, &r);
        assert!(
            matches!(&r, Err(CheckError::Run { error, .. }) if moved(error)),
            "{name}: {r:?}"
        );
    }
    // Clear, shrink and push: the allocator may hand the same address back (then it is a right
    // copy in place), or another one (then it is refused); never a wrong derivative.
    let r = check_copy::<Vec<f32>, Vec<f32>, _>(&mut p31b_vec_shrink_push_rule(), Shapes::len(8));
    show("P31b vec shrink+push", &r);
    assert!(r.is_ok() || matches!(&r, Err(CheckError::Run { error, .. }) if moved(error)));
    // The forward that grew `dst` (a wrong tangent with no error, once) is refused, its shadow
    // untouched.
    let x = vec![1.0f32, 2.0, 3.0];
    let (mut y, mut dy) = (vec![0.0f32; 3], vec![5.0f32; 3]);
    let r = p31_vec_extend_rule().forward(Duplicated::new(&mut y, &mut dy), Const(&x));
    direct("P31 forward", &r);
    assert!(matches!(&r, Err(e) if moved(e)), "{r:?}");
    assert_eq!(dy, [5.0; 3]);
}

// =============================================================================================
// P32-P35: raw pointers: writes past `len`, bytes for elements, writes the source.
// =============================================================================================

/// P32: copies one element more than `n`.
///
/// # Safety
/// Ranges valid for `n + 1` elements.
#[derivative_rule(copy, dst = host, src = host)]
pub unsafe fn p32_raw_n_plus_1(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n + 1) }
}

/// P33: a memset whose count is meant in bytes by the user (`write_bytes` counts elements).
///
/// # Safety
/// `dst + off .. + 4n` valid.
#[derivative_rule(memset, dst = host)]
pub unsafe fn p33_raw_memset_bytes(
    #[dst] dst: *mut f32,
    #[dst_offset] off: usize,
    #[len] nbytes: usize,
) {
    unsafe { core::ptr::write_bytes(dst.add(off), 0, nbytes) }
}

/// P34: the opposite confusion: elements given, divided by 4.
///
/// # Safety
/// `dst .. + n` valid.
#[derivative_rule(memset, dst = host)]
pub unsafe fn p34_raw_memset_div4(#[dst] dst: *mut f32, #[len] n: usize) {
    unsafe { core::ptr::write_bytes(dst, 0, n / 4) }
}

/// P35: a "move": copies, then zeroes the source through its `*const` (as C code does).
///
/// # Safety
/// Ranges valid for `n` elements, disjoint, the source writable.
#[derivative_rule(copy, dst = host, src = host)]
pub unsafe fn p35_raw_move(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe {
        core::ptr::copy_nonoverlapping(src, dst, n);
        core::ptr::write_bytes(src as *mut f32, 0, n);
    }
}

#[test]
fn p32_p35_raw() {
    // SAFETY: shapes hold n + 1 = 5 elements.
    let r = unsafe { check_raw_copy::<f32, _>(&mut p32_raw_n_plus_1_rule(4), Shapes::len(6)) };
    show("P32 raw n+1", &r);
    assert!(caught(&r, Check::Footprint));
    // SAFETY: off 1 + 8 elements written within 12.
    let r = unsafe {
        check_raw_memset::<f32, _>(&mut p33_raw_memset_bytes_rule(1, 8), Shapes::len(12))
    };
    show("P33 raw memset 'bytes' (8 elements, the rule says 8)", &r);
    assert!(r.is_ok());
    let r =
        unsafe { check_raw_memset::<f32, _>(&mut p34_raw_memset_div4_rule(8), Shapes::len(12)) };
    show("P34 raw memset n/4", &r);
    assert!(caught(&r, Check::Footprint));
    // SAFETY: the check's Vecs are writable.
    let r = unsafe { check_raw_copy::<f32, _>(&mut p35_raw_move_rule(6), Shapes::len(6)) };
    show("P35 raw move", &r);
    assert!(caught(&r, Check::Activity));
    let x0 = vec![1.0f32, 2.0, 3.0];
    let mut x = x0.clone();
    let (mut y, mut dy, mut dx) = (vec![0.0f32; 3], vec![0.0f32; 3], vec![0.0f32; 3]);
    // SAFETY: 3 elements each, disjoint, writable.
    let tape = unsafe {
        p35_raw_move_rule(3).augmented_primal(
            Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
            Duplicated::new(x.as_mut_ptr() as *const f32, dx.as_mut_ptr()),
        )
    };
    match tape {
        Ok(t) => {
            eprintln!("P35 augmented primal Ok: y={y:?} x={x:?}");
            dy = vec![1.0; 3];
            dx = vec![10.0; 3]; // the cotangent of x after the move: x_out = 0, so it must be dropped
            let r = unsafe {
                p35_raw_move_rule(3).reverse(
                    t,
                    Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
                    Duplicated::new(x.as_mut_ptr() as *const f32, dx.as_mut_ptr()),
                )
            };
            direct("P35 reverse", &r);
            eprintln!("P35 dx={dx:?} (true: [1,1,1], the rule's: 10 + 1)");
        }
        Err(e) => eprintln!("P35 augmented primal Err {e}"),
    }
}

// =============================================================================================
// P36-P40: users' forms that are right: docs and lints on parameters, labels, generics,
// `in_impl`, a partial memset given its rows.
// =============================================================================================

/// P36: a doc comment and a lint on each parameter, a label.
#[derivative_rule(copy)]
pub fn p36_documented(
    /// Where the values go.
    #[allow(unused_mut)]
    #[dst]
    dst: &mut [f64],
    /// Where they come from.
    #[src]
    src: &[f64],
    /// For the logs.
    label: &str,
) {
    let _ = label.len();
    dst.copy_from_slice(src);
}

/// P37: generic over the element, taking `Vec`s.
#[derivative_rule(copy)]
pub fn p37_generic<T: Differentiable>(#[dst] dst: &mut Vec<T>, #[src] src: &Vec<T>) {
    dst.copy_from_slice(src);
}

pub struct Shifter {
    pub off: usize,
}

impl Shifter {
    /// P38: the receiver, marked inert, holds the offset (a lie through `self`).
    #[derivative_rule(copy, in_impl)]
    pub fn p38_shift(#[inert] this: &Self, #[dst] dst: &mut [f32], #[src] src: &[f32]) {
        let n = dst.len();
        dst[this.off..].copy_from_slice(&src[..n - this.off]);
    }
}

/// P39: the right partial memset: rows given.
#[derivative_rule(memset)]
pub fn p39_memset_rows(
    #[dst] dst: &mut [f32],
    #[width] w: usize,
    #[height] h: usize,
    #[dst_pitch] p: usize,
) {
    for r in 0..h {
        dst[r * p / 4..][..w].fill(0.0);
    }
}

#[test]
fn p36_p40_right_forms_pass() {
    let r = check_copy(&mut p36_documented_rule("x"), Shapes::len(7));
    show("P36 documented", &r);
    assert!(r.is_ok());
    let r =
        check_copy::<Vec<half::bf16>, Vec<half::bf16>, _>(&mut p37_generic_rule(), Shapes::len(9));
    show("P37 generic bf16 Vec", &r);
    assert!(r.is_ok());
    let r = check_copy::<Vec<num_complex::Complex<f32>>, Vec<num_complex::Complex<f32>>, _>(
        &mut p37_generic_rule(),
        Shapes::len(9),
    );
    assert!(r.is_ok());
    let s = Shifter { off: 1 };
    let r = check_copy(&mut Shifter::p38_shift_rule(&s), Shapes::len(6));
    show("P38 in_impl inert receiver holding an offset", &r);
    assert!(caught(&r, Check::Footprint));
    let r = check_memset(&mut p39_memset_rows_rule(3, 1, 0), Shapes::len(6));
    show("P39 memset rows (w3 h1 p0)", &r);
    let r = check_memset(&mut p39_memset_rows_rule(3, 1, 12), Shapes::len(6));
    show("P39 memset rows (w3 h1 p12)", &r);
    assert!(r.is_ok());
}

// =============================================================================================
// P41: a stateful primitive, and the checked mode's "nothing else written" promise on lanes.
// =============================================================================================

static CALLS: AtomicUsize = AtomicUsize::new(0);

/// P41: every third call skips the last element.
#[derivative_rule(copy)]
pub fn p41_stateful(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    let c = CALLS.fetch_add(1, Ordering::SeqCst);
    let n = dst.len() - usize::from(c % 3 == 2);
    dst[..n].copy_from_slice(&src[..n]);
}

#[test]
fn p41_stateful_and_lanes() {
    CALLS.store(0, Ordering::SeqCst);
    let r = check_copy(&mut p41_stateful_rule(), Shapes::len(5));
    show("P41 stateful", &r);
    assert!(r.is_err());
    // Width 2 forward, Duplicated source: call 0 primal, call 1 lane 0 tangent, call 2 lane 1
    // (skips its last element). Checked mode: is lane 0's d_dst left as it was?
    CALLS.store(0, Ordering::SeqCst);
    let x = vec![1.0f32; 4];
    let mut y = vec![0.0f32; 4];
    let mut dys = [vec![7.0f32; 4], vec![7.0f32; 4]];
    let mut dxs = [vec![2.0f32; 4], vec![3.0f32; 4]];
    let [a, b] = &mut dys;
    let [c, d] = &mut dxs;
    let r = p41_stateful_rule().forward(
        Duplicated::batch(&mut y[..], [&mut a[..], &mut b[..]]),
        Duplicated::batch(&x[..], [&mut c[..], &mut d[..]]),
    );
    direct("P41 width 2", &r);
    eprintln!("P41 after: y={y:?} d_dst lanes={dys:?}");
    if checked() {
        assert!(is_disagree(&r));
        eprintln!("P41 message: {}", r.unwrap_err());
    } else {
        // Unchecked: Ok, lane 1's tangent wrong (its last element kept 7), no error.
        assert!(r.is_ok());
        assert_eq!(dys[1], [3.0, 3.0, 3.0, 7.0]);
    }
}

// =============================================================================================
// Promises: the one-call checks on bad input never panic; errors are typed.
// =============================================================================================

fn no_panic<R>(name: &str, f: impl FnOnce() -> R + std::panic::UnwindSafe) -> Option<R> {
    match std::panic::catch_unwind(f) {
        Ok(r) => Some(r),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            eprintln!("PANIC in {name}: {msg}");
            None
        }
    }
}

/// A right 2D copy, for the promise probes.
#[derivative_rule(copy2d)]
pub fn h_copy2d(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
) {
    for r in 0..h {
        let (d, s) = (r * dp / 4, r * sp / 4);
        dst[d..d + w].copy_from_slice(&src[s..s + w]);
    }
}

/// A right device upload on the buffer's own stream.
#[derivative_rule(copy)]
pub fn h_upload(
    #[dst] dst: &mut rules_runtime::cudarc::driver::CudaSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), rules_runtime::cudarc::driver::DriverError> {
    let s = dst.stream().clone();
    s.memcpy_htod(src, dst)
}

#[test]
fn promises_bad_inputs_never_panic_and_errors_are_typed() {
    use rules_tests::copy_slice_rule;
    let mut panics = 0;
    let mut one =
        |name: &str,
         f: Box<dyn FnOnce() -> Result<Report, CheckError> + std::panic::UnwindSafe>| {
            match no_panic(name, f) {
                Some(r) => show(name, &r),
                None => panics += 1,
            }
        };
    one(
        "B1 copy lens 5/3",
        Box::new(|| check_copy::<[f32], [f32], _>(&mut copy_slice_rule(), Shapes::lens(5, 3))),
    );
    one(
        "B2 copy len 0",
        Box::new(|| check_copy::<[f32], [f32], _>(&mut copy_slice_rule(), Shapes::len(0))),
    );
    // B3 (Shapes::len(usize::MAX / 2): a panic) and B4 (tolerance NaN: a scaling copy passes)
    // are in natural_form_promises.rs.
    one(
        "B5 copy tolerance -1 on a right copy",
        Box::new(|| {
            check_copy::<[f32], [f32], _>(&mut copy_slice_rule(), Shapes::len(4).tolerance(-1.0))
        }),
    );
    one(
        "B6 copy tolerance inf on a scaling copy",
        Box::new(|| {
            check_copy(
                &mut p09_inert_scale_rule(2.0),
                Shapes::len(4).tolerance(f64::INFINITY),
            )
        }),
    );
    one(
        "B7 region box past the buffers",
        Box::new(|| check_region(&mut h_copy2d_rule(16, 16, 4, 3), Shapes::len(4))),
    );
    one(
        "B8 region pitch below the row",
        Box::new(|| check_region(&mut h_copy2d_rule(4, 4, 4, 3), Shapes::len(12))),
    );
    one(
        "B9 region pitch not a multiple of the element",
        Box::new(|| check_region(&mut h_copy2d_rule(9, 9, 2, 2), Shapes::len(12))),
    );
    one(
        "B10 memset rows past the buffer",
        Box::new(|| check_memset(&mut p39_memset_rows_rule(3, 4, 12), Shapes::len(6))),
    );
    one(
        "B11 fill len 0",
        Box::new(|| check_fill(&mut p17_fill_neg_rule(), Shapes::len(0))),
    );
    one(
        "B12 memset huge width",
        Box::new(|| check_memset(&mut p39_memset_rows_rule(usize::MAX, 2, 16), Shapes::len(6))),
    );
    one(
        "B13 region pitch overflow",
        Box::new(|| check_region(&mut h_copy2d_rule(usize::MAX, 16, 2, 3), Shapes::len(12))),
    );
    one(
        "B14 device copy without a GPU",
        Box::new(|| check_copy(&mut h_upload_rule(), Shapes::len(4))),
    );
    one(
        "B15 seed u64::MAX",
        Box::new(|| {
            check_copy::<[f32], [f32], _>(&mut copy_slice_rule(), Shapes::len(3).seed(u64::MAX))
        }),
    );
    one(
        "B16 fill-from-buffer with an empty value buffer",
        Box::new(|| check_region(&mut p06_fill_buf_second_rule(), Shapes::lens(3, 0))),
    );
    assert_eq!(panics, 0, "a one-call check panicked on bad input");
}

/// In checked mode, a violation changes nothing else, for a memset, a fill, a region and a
/// pointer rule, forward and augmented primal.
#[test]
fn checked_mode_changes_nothing_else() {
    if !checked() {
        return;
    }
    let (mut y, mut dy) = (vec![1.0f32; 6], vec![4.0f32; 6]);
    let r = p12_memset_strided_rule().augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]));
    assert!(is_disagree(&r));
    assert_eq!(dy, [4.0; 6]);
    let (mut y, mut dy) = (vec![1.0f64; 4], vec![4.0f64; 4]);
    let r = p20_fill_tail_rule()
        .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Active(2.0));
    assert!(is_disagree(&r));
    let r = p20_fill_tail_rule().forward(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Dual::new(2.0, 9.0),
    );
    assert!(is_disagree(&r));
    assert_eq!(dy, [4.0; 4]);
    let x: Vec<f32> = (1..=18).map(|i| i as f32).collect();
    let (mut y, mut dy, mut dx) = (vec![0.0f32; 18], vec![4.0f32; 18], vec![3.0f32; 18]);
    let r = p29_slice_elems_rule(12, 12, 3, 3, 2, 2, 2).augmented_primal(
        Duplicated::new(&mut y[..], &mut dy[..]),
        Duplicated::new(&x[..], &mut dx[..]),
    );
    direct("P29 checked 2 slices", &r);
    assert!(is_disagree(&r));
    assert_eq!((dy, dx), (vec![4.0; 18], vec![3.0; 18]));
    let (mut y, mut dy) = (vec![1.0f32; 12], vec![4.0f32; 12]);
    // SAFETY: 1 + 8 elements within 12.
    let r = unsafe {
        p34_raw_memset_div4_rule(8).forward(Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()))
    };
    direct("P34 checked", &r);
    assert!(is_disagree(&r));
    assert_eq!(dy, [4.0; 12]);
}

// =============================================================================================
// P42-P44: boxes whose rows or slices overlap (a broadcast in the source, a clobber in the
// destination). The primitive is a plain, right pitched copy; the question is what the rules
// make of such boxes.
// =============================================================================================

/// A right 3D copy (pitches in bytes, slice heights in rows).
#[allow(clippy::too_many_arguments)]
#[derivative_rule(copy3d)]
pub fn h_copy3d(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[dst_pitch] dp: usize,
    #[src_pitch] sp: usize,
    #[dst_slice_height] dsh: usize,
    #[src_slice_height] ssh: usize,
    #[width] w: usize,
    #[height] h: usize,
    #[depth] d: usize,
) {
    let (dr, sr) = (dp / 4, sp / 4);
    for z in 0..d {
        for y in 0..h {
            let di = z * dsh * dr + y * dr;
            let si = z * ssh * sr + y * sr;
            dst[di..di + w].copy_from_slice(&src[si..si + w]);
        }
    }
}

#[test]
fn p42_p44_overlapping_boxes() {
    // P42: src slice height 0: every destination slice reads source slice 0 (a broadcast).
    let r = check_region(&mut h_copy3d_rule(8, 8, 2, 0, 2, 2, 3), Shapes::lens(12, 4));
    show("P42 copy3d src slice height 0 (broadcast)", &r);
    assert!(matches!(
        r,
        Err(CheckError::Run {
            error: Error::BadRegion { .. },
            ..
        })
    ));
    // P42b: src slice height 1 < height 2: source slices overlap by a row.
    let r = check_region(&mut h_copy3d_rule(8, 8, 2, 1, 2, 2, 3), Shapes::lens(12, 8));
    show("P42b copy3d src slice height 1 < height 2", &r);
    assert!(matches!(
        r,
        Err(CheckError::Run {
            error: Error::BadRegion { .. },
            ..
        })
    ));
    // P43: dst slice height 1 < height 2: destination slices overlap (the later one wins).
    let r = check_region(&mut h_copy3d_rule(8, 8, 1, 2, 2, 2, 3), Shapes::lens(8, 12));
    show("P43 copy3d dst slice height 1 < height 2", &r);
    assert!(matches!(
        r,
        Err(CheckError::Run {
            error: Error::BadRegion { .. },
            ..
        })
    ));
    // P44: src pitch 0 in 2D: every row reads source row 0.
    let r = check_region(&mut h_copy2d_rule(8, 0, 2, 3), Shapes::lens(6, 2));
    show("P44 copy2d src pitch 0", &r);
    assert!(matches!(
        r,
        Err(CheckError::Run {
            error: Error::BadRegion { .. },
            ..
        })
    ));
}
