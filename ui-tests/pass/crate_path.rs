//! `crate = path`: the runtime under another name. The generated code names the runtime only
//! through the given path (the macro's own unit tests check that no `rules_runtime` is left).

use rules_runtime as rt;
use rt::{CopyRule, RawCopyRule};

mod facade {
    //! A crate that re-exports the runtime, as a wrapper library would.
    pub use rules_runtime as runtime;
}

#[rt::derivative_rule(copy, crate = rt)]
fn via_alias(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[facade::runtime::derivative_rule(copy, crate = crate::facade::runtime)]
fn via_facade(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

#[rt::derivative_rule(copy, crate = ::rules_runtime, dst = host, src = host)]
unsafe fn absolute(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

#[rt::derivative_rule(copy, crate = "rt")]
fn quoted(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

fn main() {
    let x = [1.0f32; 2];
    let mut y = [0.0f32; 2];
    via_alias_rule()
        .forward(rt::Const(&mut y[..]), rt::Const(&x[..]))
        .unwrap();
    via_facade_rule()
        .forward(rt::Const(&mut y[..]), rt::Const(&x[..]))
        .unwrap();
    unsafe { absolute_rule(2).forward(rt::Const(y.as_mut_ptr()), rt::Const(x.as_ptr())) }
        .unwrap();
    quoted_rule()
        .forward(rt::Const(&mut y[..]), rt::Const(&x[..]))
        .unwrap();
}
