use rules_runtime::derivative_rule;

unsafe extern "C" {
    // A C-variadic copy routine: the rule could not know what the `...` arguments are.
    #[derivative_rule(copy, dst = host, src = host)]
    fn vcopy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize, ...);
}

fn main() {}
