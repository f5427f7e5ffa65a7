use rules_runtime::derivative_rule;

#[derivative_rule(copy, dst = host, src = host)]
unsafe fn raw_copy(
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: u32,
    #[dst_offset] at: i64,
    #[src_offset] from: &usize,
) {
    unsafe { core::ptr::copy_nonoverlapping(src.add(*from), dst.offset(at as isize), n as usize) }
}

fn main() {}
