use rules_runtime::derivative_rule;

#[derive(Clone, Copy)]
struct Meters(f32);

#[derivative_rule(copy)]
fn newtype(#[dst] dst: &mut [Meters], #[src] src: &[Meters]) {
    dst.copy_from_slice(src);
}

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn complex_ints(
    #[dst] dst: *mut num_complex::Complex<i32>,
    #[src] src: *const num_complex::Complex<i32>,
    #[len] n: usize,
) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
