//! Slice-shaped rules over `[T]`, `Vec<T>` and arrays, for all six element types.

use rules_runtime::{CopyRule};
use half::{bf16, f16};
use num_complex::{Complex, Complex32, Complex64};
use rules_runtime::{Const, Duplicated, DuplicatedOnly, derivative_rule};

#[derivative_rule(copy)]
fn copy_f32(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy)]
fn copy_f64_vec(#[dst] dst: &mut Vec<f64>, #[src] src: &Vec<f64>) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy)]
fn copy_f16_array(#[dst] dst: &mut [f16; 3], #[src] src: &[f16; 3]) {
    *dst = *src;
}

#[derivative_rule(copy)]
fn copy_bf16_vec_from_slice(#[dst] dst: &mut Vec<bf16>, #[src] src: &[bf16]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy)]
fn copy_c32(#[dst] dst: &mut [Complex<f32>], #[src] src: &[Complex32]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy)]
fn copy_c64(#[dst] dst: &mut [Complex64; 2], #[src] src: &[num_complex::Complex<f64>]) {
    dst.copy_from_slice(src);
}

fn main() {
    // f32, reverse mode with a constant destination shadow seed.
    let x = [1.0f32, 2.0];
    let mut dx = [0.0f32; 2];
    let (mut y, mut dy) = ([0.0f32; 2], [0.0f32; 2]);
    let tape = copy_f32_rule()
.augmented_primal(
Duplicated::new(&mut y[..], &mut dy[..]),
Duplicated::new(&x[..], &mut dx[..]),
)
    .unwrap();
    assert_eq!(y, x);
    dy = [1.0, 2.0];
    copy_f32_rule()
.reverse(
tape,
Duplicated::new(&mut y[..], &mut dy[..]),
Duplicated::new(&x[..], &mut dx[..]),
)
    .unwrap();
    assert_eq!((dx, dy), ([1.0, 2.0], [0.0, 0.0]));

    // f64 over Vec, forward mode.
    let (xv, mut dxv) = (vec![3.0f64; 4], vec![1.0f64; 4]);
    let (mut yv, mut dyv) = (vec![0.0f64; 4], vec![0.0f64; 4]);
    copy_f64_vec_rule()
.forward(
Duplicated::new(&mut yv, &mut dyv),
Duplicated::new(&xv, &mut dxv),
)
    .unwrap();
    assert_eq!((&yv, &dyv), (&xv, &dxv));

    // f16 arrays, a destination whose primal result is not needed.
    let xh = [f16::ONE; 3];
    let (mut yh, mut dyh) = ([f16::ZERO; 3], [f16::ONE; 3]);
    copy_f16_array_rule().forward(DuplicatedOnly::new(&mut yh, &mut dyh), Const(&xh)).unwrap();
    assert_eq!(dyh, [f16::ZERO; 3]);

    // bf16: Vec destination, slice source.
    let xb = [bf16::ONE; 2];
    let mut yb = vec![bf16::ZERO; 2];
    copy_bf16_vec_from_slice_rule().forward(Const(&mut yb), Const(&xb[..])).unwrap();
    assert_eq!(yb, xb);

    // Complex elements, spelled three ways.
    let xc = [Complex32::new(1.0, -1.0); 2];
    let mut yc = [Complex::<f32>::new(0.0, 0.0); 2];
    copy_c32_rule().forward(Const(&mut yc[..]), Const(&xc[..])).unwrap();
    assert_eq!(yc, xc);
    let xz = [Complex64::new(0.5, 2.0); 2];
    let mut yz = [Complex64::new(0.0, 0.0); 2];
    copy_c64_rule().forward(Const(&mut yz), Const(&xz[..])).unwrap();
    assert_eq!(yz, xz);
}
