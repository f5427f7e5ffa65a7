use rules_runtime::derivative_rule;

// An empty element list, a repeated option, another argument Enzyme's C calling convention
// cannot carry, and a stream with no handle to carry it.
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
    #[inert] calls: &mut Vec<usize>,
) {
    calls.push(n);
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

// A stream, and no handle to carry it (both sides pageable host memory, passed as slices).
#[derivative_rule(copy, dst = host, src = host, autodiff)]
unsafe fn host_with_stream(
    stream: &rules_runtime::cudarc::driver::CudaStream,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) {
    let _ = stream;
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

fn main() {}
