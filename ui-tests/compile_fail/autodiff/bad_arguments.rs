use rules_runtime::derivative_rule;

// An empty element list, a repeated option, and another argument Enzyme's C calling
// convention cannot carry.
#[derivative_rule(copy, dst = host, src = host, autodiff())]
unsafe fn empty_list(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

#[derivative_rule(copy, dst = host, src = host, autodiff, autodiff)]
unsafe fn twice(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

#[derivative_rule(copy, dst = host, src = host, autodiff)]
unsafe fn counted(
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
    calls: &mut Vec<usize>,
) {
    calls.push(n);
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
