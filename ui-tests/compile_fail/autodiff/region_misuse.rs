use rules_runtime::cudarc::driver::CudaStream;
use rules_runtime::derivative_rule;

// A memset of pageable host memory with a stream: no handle carries it (the destination is a
// slice).
#[derivative_rule(memset, dst = host, autodiff)]
unsafe fn clear_host(stream: &CudaStream, #[dst] dst: *mut f32, #[len] n: usize, #[value] bits: u32) {
    let _ = stream;
    for i in 0..n {
        unsafe { dst.add(i).write(f32::from_bits(bits)) };
    }
}

// A pitched copy with an argument Enzyme's C calling convention cannot carry.
#[derivative_rule(copy2d, dst = host, src = host, autodiff)]
unsafe fn counted_rows(
    #[dst] dst: *mut f32,
    #[dst_pitch] dp: usize,
    #[src] src: *const f32,
    #[src_pitch] sp: usize,
    #[width] w: usize,
    #[height] h: usize,
    #[inert] calls: &mut u32,
) {
    *calls += 1;
    let _ = (dst, dp, src, sp, w, h);
}

// A generic fill without its element types.
#[derivative_rule(fill, dst = host, autodiff)]
unsafe fn fill_any<T: rules_runtime::Differentiable>(#[dst] dst: *mut T, #[len] n: usize, #[value] v: T) {
    for i in 0..n {
        unsafe { dst.add(i).write(v) };
    }
}

fn main() {}
