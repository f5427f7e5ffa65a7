#![feature(autodiff)]
//! Forward mode probe: a hand-written `__enzyme_register_derivative_<primal>` for a host copy.
use std::autodiff::autodiff_forward;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

static FWD: AtomicUsize = AtomicUsize::new(0);

#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn probe_copy(dst: *mut f32, src: *const f32, n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// The forward rule: each argument followed by its shadow.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn probe_copy_fwd(
    dst: *mut f32,
    d_dst: *mut f32,
    src: *const f32,
    d_src: *const f32,
    n: usize,
    d_n: usize,
) {
    FWD.fetch_add(1, SeqCst);
    eprintln!("  [fwd rule] dst={dst:p} d_dst={d_dst:p} src={src:p} d_src={d_src:p} n={n} d_n={d_n}");
    unsafe {
        core::ptr::copy_nonoverlapping(src, dst, n);
        // Marked: 10x the tangent, to tell the rule apart from Enzyme's own derivative.
        for i in 0..n {
            *d_dst.add(i) = 10.0 * *d_src.add(i);
        }
    }
}

#[repr(C)]
pub struct Reg2(pub [*const (); 2]);
unsafe impl Sync for Reg2 {}

#[unsafe(no_mangle)]
#[used]
pub static __enzyme_register_derivative_probe_copy: Reg2 =
    Reg2([probe_copy as *const (), probe_copy_fwd as *const ()]);

#[autodiff_forward(df, Dual, Dual)]
fn f(x: &[f32; 3]) -> f32 {
    let mut h = [1.0f32; 3];
    unsafe { probe_copy(h.as_mut_ptr(), x.as_ptr(), 3) };
    h.iter().map(|v| v * v).sum()
}

fn main() {
    let x = [1.0f32, 2.0, 3.0];
    let dx = [1.0f32, 0.0, 0.0];
    let (y, dy) = df(&x, &dx);
    println!("forward: f = {y}, df.[1,0,0] = {dy} (Enzyme's own derivative: 2; the rule's: 20), rule calls = {}", FWD.load(SeqCst));
}
