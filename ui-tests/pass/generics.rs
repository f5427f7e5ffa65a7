//! Generic rules: element type parameters, const generics, lifetimes and `where` clauses.

use rules_runtime::{CopyRule, RawCopyRule};
use rules_runtime::{Const, Differentiable, Duplicated, derivative_rule};

#[derivative_rule(copy)]
fn generic<T: Differentiable>(#[dst] dst: &mut [T], #[src] src: &[T]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy)]
fn arrays<T, const N: usize>(#[dst] dst: &mut [T; N], #[src] src: &[T; N])
where
    T: Differentiable,
{
    *dst = *src;
}

#[derivative_rule(copy)]
fn lifetimes<'a, 'b: 'a>(#[dst] dst: &'a mut [f64], #[src] src: &'b [f64], tag: &'a str) {
    let _ = tag;
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn generic_ptr<T: Differentiable>(
    #[dst] dst: *mut T,
    #[src] src: *const T,
    #[len] n: usize,
) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {
    let x = [1.0f32; 3];
    let mut dx = [0.0f32; 3];
    let mut y = [0.0f32; 3];
    generic_rule().forward(Const(&mut y[..]), Duplicated::new(&x[..], &mut dx[..])).unwrap();
    arrays_rule().forward(Const(&mut y), Const(&x)).unwrap();
    let xd = vec![2.0f64; 2];
    let mut yd = vec![0.0f64; 2];
    lifetimes_rule("t").forward(Const(&mut yd[..]), Const(&xd[..])).unwrap();
    unsafe { generic_ptr_rule(3).forward(Const(y.as_mut_ptr()), Const(x.as_ptr())) }.unwrap();
    assert_eq!((y, yd), (x, xd));
}

