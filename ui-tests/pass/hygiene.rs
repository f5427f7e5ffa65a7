//! The generated code survives a crate that shadows `Option`, `Result`, `Box`, `Vec` and `core`,
//! and adds no warning under strict lints (denied here, at the crate level).
#![deny(missing_docs, unused_qualifications, unsafe_op_in_unsafe_fn)]
#![deny(
    unused,
    nonstandard_style,
    rust_2018_idioms,
    unreachable_pub,
    single_use_lifetimes
)]
#![deny(
    trivial_casts,
    trivial_numeric_casts,
    unused_lifetimes,
    elided_lifetimes_in_paths
)]

/// Shadows `core`.
mod core {}

/// Shadows the prelude's `Option`.
#[allow(dead_code)]
enum Option {
    /// Nothing.
    Nothing,
}

/// Shadows the prelude's `Result`.
#[allow(dead_code)]
struct Result;

/// Shadows the prelude's `Box`.
#[allow(dead_code)]
struct Box;

/// Shadows the prelude's `Vec`.
#[allow(dead_code)]
struct Vec;

/// Shadows the prelude's `Ok`, `Err`, `Some` and `None`.
#[allow(dead_code)]
enum Shadowed {
    /// Shadows `Ok`.
    Ok,
    /// Shadows `Err`.
    Err,
    /// Shadows `Some`.
    Some,
    /// Shadows `None`.
    None,
}
use rules_runtime::{CopyRule, RawCopyRule};
#[allow(unused_imports)]
use Shadowed::{Err, None, Ok, Some};

/// The rules live in a public module, so that `missing_docs` looks at them.
pub mod rules {
    use rules_runtime::derivative_rule;

    /// A slice rule.
    #[derivative_rule(copy)]
    pub fn copy_slice(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
        dst.copy_from_slice(src);
    }

    /// A fallible slice rule over `std::vec::Vec`.
    #[derivative_rule(copy)]
    pub fn copy_vec(
        #[dst] dst: &mut ::std::vec::Vec<f64>,
        #[src] src: &::std::vec::Vec<f64>,
    ) -> ::std::result::Result<(), ::std::string::String> {
        dst.copy_from_slice(src);
        ::std::result::Result::Ok(())
    }

    /// A pointer rule.
    ///
    /// # Safety
    /// Both pointers valid for `n` elements at their offsets.
    #[derivative_rule(copy, dst = host, src = host)]
    pub unsafe fn copy_ptr(
        #[dst] dst: *mut f32,
        #[src] src: *const f32,
        #[dst_offset] at: usize,
        #[len] n: usize,
    ) {
        // SAFETY: the caller's contract.
        unsafe { ::std::ptr::copy_nonoverlapping(src, dst.add(at), n) }
    }
}

fn main() {
    use rules_runtime::Const;
    let x = [1.0f32; 2];
    let mut y = [0.0f32; 2];
    rules::copy_slice_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    let xv = ::std::vec![1.0f64; 2];
    let mut yv = ::std::vec![0.0f64; 2];
    rules::copy_vec_rule().forward(Const(&mut yv), Const(&xv)).unwrap();
    // SAFETY: both arrays hold 2 elements.
    unsafe { rules::copy_ptr_rule(0, 2).forward(Const(y.as_mut_ptr()), Const(x.as_ptr())) }.unwrap();
}
