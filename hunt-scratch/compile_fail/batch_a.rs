//! Batch A: forms users write beside the buffers; which does the macro refuse at the parameter?
#![allow(unused_variables, dead_code, unused_imports)]
use rules_runtime::prelude::*;
use rules_runtime::{Differentiable, derivative_rule};
use std::num::NonZeroUsize;
use std::marker::PhantomData;
use std::cell::Cell;

type Real = f32;
type Offset = usize;
#[derive(Clone, Copy)]
pub struct Config { pub off: usize }

// A1 memset given a float through an alias.
#[derivative_rule(memset)]
pub fn a1_memset_alias(#[dst] dst: &mut [f32], #[value] v: Real) { dst.fill(v); }
// A2 memset whose value has the generic element type.
#[derivative_rule(memset)]
pub fn a2_memset_generic<T: Differentiable>(#[dst] dst: &mut [T], #[value] v: T) { dst.fill(v); }
// A3 memset whose value is another generic.
#[derivative_rule(memset)]
pub fn a3_memset_other<T: Differentiable, B: Copy + Into<T>>(#[dst] dst: &mut [T], #[value] v: B) { dst.fill(v.into()); }
// A4 memset given a float by full path.
#[derivative_rule(memset)]
pub fn a4_memset_path(#[dst] dst: &mut [f32], #[value] v: ::core::primitive::f32) { dst.fill(v); }
// A5 memset given an f16.
#[derivative_rule(memset)]
pub fn a5_memset_f16(#[dst] dst: &mut [half::f16], #[value] v: half::f16) { dst.fill(v); }
// A6 memset given a u32 that the body converts as a number (not bits).
#[derivative_rule(memset)]
pub fn a6_memset_u32_as_value(#[dst] dst: &mut [f32], #[value] v: u32) { dst.fill(v as f32); }
// A8 gather through an index slice.
#[derivative_rule(copy)]
pub fn a8_gather(#[dst] dst: &mut [f32], #[src] src: &[f32], idx: &[usize]) { for (d, &i) in dst.iter_mut().zip(idx) { *d = src[i]; } }
// A9 weights.
#[derivative_rule(copy)]
pub fn a9_weights(#[dst] dst: &mut [f32], #[src] src: &[f32], w: &[f32]) { for i in 0..dst.len() { dst[i] = w[i] * src[i]; } }
// A10 mask in a Vec.
#[derivative_rule(copy)]
pub fn a10_mask(#[dst] dst: &mut [f32], #[src] src: &[f32], mask: &Vec<bool>) { for i in 0..dst.len() { if mask[i] { dst[i] = src[i]; } } }
// A11 a mode string.
#[derivative_rule(copy)]
pub fn a11_mode(#[dst] dst: &mut [f32], #[src] src: &[f32], mode: &str) { if mode == "half" { let k = dst.len() / 2; dst[..k].copy_from_slice(&src[..k]); } else { dst.copy_from_slice(src); } }
// A12 a mode String.
#[derivative_rule(copy)]
pub fn a12_mode_string(#[dst] dst: &mut [f32], #[src] src: &[f32], mode: String) { if mode.len() > 3 { dst[0] = 0.0; } }
// A13 a config by value.
#[derivative_rule(copy)]
pub fn a13_config(#[dst] dst: &mut [f32], #[src] src: &[f32], cfg: Config) { dst[cfg.off..].copy_from_slice(&src[cfg.off..]); }
// A15 offset through an alias.
#[derivative_rule(copy)]
pub fn a15_alias_offset(#[dst] dst: &mut [f32], #[src] src: &[f32], off: Offset) { dst[off..].copy_from_slice(&src[off..]); }
// A16 NonZeroUsize.
#[derivative_rule(copy)]
pub fn a16_nonzero(#[dst] dst: &mut [f32], #[src] src: &[f32], n: NonZeroUsize) { dst[..n.get()].copy_from_slice(&src[..n.get()]); }
// A17 a function pointer.
#[derivative_rule(copy)]
pub fn a17_fnptr(#[dst] dst: &mut [f32], #[src] src: &[f32], f: fn(f32) -> f32) { for i in 0..dst.len() { dst[i] = f(src[i]); } }
// A18 impl Fn.
#[derivative_rule(copy)]
pub fn a18_impl_fn(#[dst] dst: &mut [f32], #[src] src: &[f32], f: impl Fn(f32) -> f32) { for i in 0..dst.len() { dst[i] = f(src[i]); } }
// A20 a tuple pattern.
#[derivative_rule(copy)]
pub fn a20_tuple(#[dst] dst: &mut [f32], #[src] src: &[f32], (lo, hi): (usize, usize)) { dst[lo..hi].copy_from_slice(&src[lo..hi]); }
// A21 an underscore.
#[derivative_rule(copy)]
pub fn a21_underscore(#[dst] dst: &mut [f32], #[src] src: &[f32], _: usize) { dst.copy_from_slice(src); }
// A22 an array pattern.
#[derivative_rule(copy)]
pub fn a22_array(#[dst] dst: &mut [f32], #[src] src: &[f32], [lo, hi]: [usize; 2]) { dst[lo..hi].copy_from_slice(&src[lo..hi]); }
// A23 Option<usize>.
#[derivative_rule(copy)]
pub fn a23_option(#[dst] dst: &mut [f32], #[src] src: &[f32], k: Option<usize>) { let k = k.unwrap_or(dst.len()); dst[..k].copy_from_slice(&src[..k]); }
// A24 PhantomData.
#[derivative_rule(copy)]
pub fn a24_phantom(#[dst] dst: &mut [f32], #[src] src: &[f32], p: PhantomData<f64>) { dst.copy_from_slice(src); }
// A25 char.
#[derivative_rule(copy)]
pub fn a25_char(#[dst] dst: &mut [f32], #[src] src: &[f32], c: char) { if c == 'h' { dst[0] = 0.0; } }
// A26 &usize.
#[derivative_rule(copy)]
pub fn a26_ref_usize(#[dst] dst: &mut [f32], #[src] src: &[f32], k: &usize) { dst[..*k].copy_from_slice(&src[..*k]); }
// A27 &mut usize out-count, unmarked.
#[derivative_rule(copy)]
pub fn a27_out_count(#[dst] dst: &mut [f32], #[src] src: &[f32], written: &mut usize) { dst.copy_from_slice(src); *written = dst.len(); }
// A28 Box<usize>.
#[derivative_rule(copy)]
pub fn a28_box(#[dst] dst: &mut [f32], #[src] src: &[f32], k: Box<usize>) { dst[..*k].copy_from_slice(&src[..*k]); }
// A29 Cell<usize> by value.
#[derivative_rule(copy)]
pub fn a29_cell(#[dst] dst: &mut [f32], #[src] src: &[f32], k: Cell<usize>) { dst[..k.get()].copy_from_slice(&src[..k.get()]); }
// A30 a fixed-size array buffer.
#[derivative_rule(copy)]
pub fn a30_array_buf(#[dst] dst: &mut [f32; 8], #[src] src: &[f32; 8]) { *dst = *src; }
// A31 a boxed slice buffer.
#[derivative_rule(copy)]
pub fn a31_boxed(#[dst] dst: &mut Box<[f32]>, #[src] src: &Box<[f32]>) { dst.copy_from_slice(src); }
// A32 Vec<f32> from Vec<f64>.
#[derivative_rule(copy)]
pub fn a32_convert(#[dst] dst: &mut Vec<f32>, #[src] src: &Vec<f64>) { for i in 0..dst.len() { dst[i] = src[i] as f32; } }
// A42 other integers.
#[derivative_rule(copy)]
pub fn a42_ints(#[dst] dst: &mut [f32], #[src] src: &[f32], a: i64, b: isize, c: u8, d: u128, e: i8) { }
// A43 other ranges, a RangeBounds generic.
#[derivative_rule(copy)]
pub fn a43_ranges<R: std::ops::RangeBounds<usize>>(#[dst] dst: &mut [f32], #[src] src: &[f32], a: std::ops::RangeInclusive<usize>, b: core::ops::RangeTo<usize>, r: R) { }
// A44 generic integer.
#[derivative_rule(copy)]
pub fn a44_generic_n<N: Into<usize>>(#[dst] dst: &mut [f32], #[src] src: &[f32], n: N) { let n = n.into(); dst[..n].copy_from_slice(&src[..n]); }
// A45 a const generic that chooses the elements.
#[derivative_rule(copy)]
pub fn a45_const_k<const K: usize>(#[dst] dst: &mut [f32], #[src] src: &[f32]) { dst[..K].copy_from_slice(&src[..K]); }
// A49 a doc-commented, linted count without a role.
#[derivative_rule(copy)]
pub fn a49_doc_count(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    /// How many elements to copy.
    #[allow(unused)]
    k: usize,
) { dst[..k].copy_from_slice(&src[..k]); }
// A50 a memset of a run on a slice: #[width] alone.
#[derivative_rule(memset)]
pub fn a50_memset_width(#[dst] dst: &mut [f32], #[width] n: usize) { dst[..n].fill(0.0); }
// A51 a fill of a run on a slice: #[width] alone.
#[derivative_rule(fill)]
pub fn a51_fill_width(#[dst] dst: &mut [f32], #[width] n: usize, #[value] v: f32) { dst[..n].fill(v); }
// A52 f32 as a tuple struct newtype scale.
#[derive(Clone, Copy)]
pub struct Scale(pub f32);
#[derivative_rule(copy)]
pub fn a52_newtype_scale(#[dst] dst: &mut [f32], #[src] src: &[f32], s: Scale) { for i in 0..dst.len() { dst[i] = s.0 * src[i]; } }
// A53 a slice of the element type as the memset's value (bits).
#[derivative_rule(memset)]
pub fn a53_memset_value_slice(#[dst] dst: &mut [f32], #[value] v: &[f32]) { dst.fill(v[0]); }
// A54 mutable source.
#[derivative_rule(copy)]
pub fn a54_mut_src(#[dst] dst: &mut [f32], #[src] src: &mut [f32]) { dst.copy_from_slice(src); src.fill(0.0); }
// A55 fill whose value is a host one-element buffer.
#[derivative_rule(fill)]
pub fn a55_fill_host_buf(#[dst] dst: &mut [f32], #[value] v: &[f32]) { dst.fill(v[1]); }
// A56 a tuple of a stream-free struct reference? (a user struct by shared ref: taken as the stream)
// (batch B)
fn main() {}
