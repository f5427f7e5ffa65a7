use rules_runtime::RawCopyRule;
use rules_runtime::{Duplicated, derivative_rule};

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn raw_copy(#[dst] dst: *mut f64, #[src] src: *const f64, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {
    let x = [1.0f64; 4];
    let (mut dx1, mut dx2) = ([0.0f64; 4], [0.0f64; 4]);
    let mut y = [0.0f64; 4];
    let mut dy = [0.0f64; 4];
    let _ = unsafe {
        raw_copy_rule(4).augmented_primal(
            Duplicated::new(y.as_mut_ptr(), dy.as_mut_ptr()),
            Duplicated::batch(x.as_ptr(), [dx1.as_mut_ptr(), dx2.as_mut_ptr()]),
        )
    };
}
