//! SILENT: a memset "given a float" is refused when the type is spelled `f32` (or `half::f16`,
//! `::core::primitive::f32`), but accepted when spelled through an alias or as the generic element
//! type. The rule treats the value as a bit pattern with no derivative: `reverse` returns `()`,
//! so the gradient of `v` (true d_v = Σ d_y) is dropped. Neither `check_memset` (the value is a
//! field of the rule object, not an input) nor the checked mode (one repeated pattern) reports it.
//!
//! Expected: both functions refused like `#[value] v: f32` ("a memset's value is a bit pattern
//! ... make the rule `#[derivative_rule(fill)]`"), or at least a compiler check (a sealed
//! `MemsetBits` bound: u8/u16/u32). Run: copy into tests/tests/ and `cargo build -p rules-tests
//! --test memset_float_alias`: it compiles; `hunt.rs::p01_p03_...` shows the lost gradient.
use rules_runtime::prelude::*;
use rules_runtime::{Differentiable, derivative_rule};

type Real = f32;

#[derivative_rule(memset)]
pub fn memset_alias(#[dst] dst: &mut [f32], #[value] v: Real) {
    dst.fill(v);
}

#[derivative_rule(memset)]
pub fn memset_generic<T: Differentiable>(#[dst] dst: &mut [T], #[value] v: T) {
    dst.fill(v);
}

#[test]
fn the_gradient_of_v_is_dropped() {
    let (mut y, mut dy) = (vec![0.0f32; 4], vec![1.0f32; 4]);
    let tape = memset_alias_rule(0.75).augmented_primal(Duplicated::new(&mut y[..], &mut dy[..])).unwrap();
    let () = memset_alias_rule(0.75).reverse(tape, Duplicated::new(&mut y[..], &mut dy[..])).unwrap();
    // d_v should be 4; there is nowhere it could be returned, and no error.
    assert_eq!(dy, [0.0; 4]);
}
