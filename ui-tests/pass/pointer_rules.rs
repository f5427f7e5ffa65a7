//! Pointer-shaped rules: raw pointers with a declared memory kind, a length, and optional offsets.

use rules_runtime::{RawCopyRule};
use rules_runtime::{Const, Duplicated, derivative_rule};

/// A plain host copy of `n` elements.
#[derivative_rule(copy, dst = host, src = host)]
unsafe fn host_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// A copy at offsets, between pinned and unified memory (host-accessible kinds).
#[derivative_rule(copy, dst = unified, src = pinned)]
unsafe fn offset_copy(
    #[dst] dst: *mut f64,
    #[dst_offset] at: usize,
    #[src] src: *const f64,
    #[src_offset] from: usize,
    #[len] n: usize,
) {
    unsafe { core::ptr::copy_nonoverlapping(src.add(from), dst.add(at), n) }
}

/// Only a destination offset; a safe primal still gives `unsafe` rules (the pointers' contract).
#[derivative_rule(copy, dst = host, src = host)]
fn checked_copy(
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[dst_offset] at: usize,
    #[len] n: usize,
) {
    if !dst.is_null() && !src.is_null() {
        unsafe { core::ptr::copy_nonoverlapping(src, dst.add(at), n) }
    }
}

fn main() {
    let x = [1.0f32, 2.0, 3.0];
    let mut dx = [0.0f32; 3];
    let (mut y, mut dy) = ([0.0f32; 3], [0.0f32; 3]);
    unsafe {
        let tape = host_copy_rule(3)
.augmented_primal(
Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
Duplicated::new(x.as_ptr(), dx.as_mut_ptr()),
)
        .unwrap();
        dy = [1.0, 1.0, 1.0];
        host_copy_rule(3)
.reverse(
tape,
Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
Duplicated::new(x.as_ptr(), dx.as_mut_ptr()),
)
        .unwrap();
    }
    assert_eq!((y, dx, dy), (x, [1.0; 3], [0.0; 3]));

    let xs = [1.0f64, 2.0, 3.0, 4.0];
    let mut ys = [0.0f64; 4];
    unsafe {
        offset_copy_rule(1, 2, 2).forward(Const(ys.as_mut_ptr()), Const(xs.as_ptr())).unwrap();
    }
    assert_eq!(ys, [0.0, 3.0, 4.0, 0.0]);

    let mut z = [0.0f32; 4];
    unsafe {
        checked_copy_rule(1, 3).forward(Const(z.as_mut_ptr()), Const(x.as_ptr())).unwrap();
    }
    assert_eq!(z, [0.0, 1.0, 2.0, 3.0]);
}
