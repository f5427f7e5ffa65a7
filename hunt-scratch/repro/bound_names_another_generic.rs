//! MISLEADING REFUSAL of a right primitive: a generic parameter whose bound names another generic
//! (`L: PartialEq<T>`) on an `#[inert]` (or `#[value]`) parameter fails with rustc's
//! "error[E0425]: cannot find type `T` in this scope", pointing at the user's own, correct bound.
//! The same bound in a `where` clause compiles (hunt-scratch/compile_fail/batch_d.rs, d2): the way
//! out exists, but the message does not lead there.
#![allow(unused_variables)]
use rules_runtime::prelude::*;
use rules_runtime::{Differentiable, derivative_rule};

#[derivative_rule(copy)]
pub fn inert_tag<T: Differentiable, L: Copy + PartialEq<T>>(#[dst] dst: &mut [T], #[src] src: &[T], #[inert] tag: L) {
    dst.copy_from_slice(src);
}

fn main() {}
