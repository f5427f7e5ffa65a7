use half::f16;
use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn widen(#[dst] dst: &mut [f64], #[src] src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = f64::from(*s);
    }
}

#[derivative_rule(copy)]
fn vec_from_array(#[dst] dst: &mut Vec<f32>, #[src] src: &[f16; 4]) {
    let _ = (dst, src);
}

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn ptr_widen(#[dst] dst: *mut f64, #[src] src: *const f32, #[len] n: usize) {
    let _ = (dst, src, n);
}

fn main() {}
