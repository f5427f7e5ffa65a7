use rules_runtime::derivative_rule;

// Four independent mistakes in a pointer rule, all reported in one compile.
#[derivative_rule(copy, src = host)]
unsafe fn raw_copy(#[dst] dst: *const u16, #[src] src: *const u16, count: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst as *mut u16, count) }
}

fn main() {}
