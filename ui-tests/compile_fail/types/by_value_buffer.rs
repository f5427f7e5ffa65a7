use rules_runtime::derivative_rule;

#[derivative_rule(copy)]
fn owned(#[dst] dst: Vec<f32>, #[src] src: Vec<f32>) {
    let _ = (dst, src);
}

#[derivative_rule(copy, dst = host)]
unsafe fn mixed(#[dst] dst: *mut f32, #[src] src: &[f32]) {
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
}

fn main() {}
