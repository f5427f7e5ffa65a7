//! A parameter under `#[cfg(...)]`: the generated rules carry the `#[cfg]` on the parameter and on
//! the argument they pass to the primal, so they have the primal's arity in every configuration.
#![allow(dead_code)]

use rules_runtime::{Const, CopyRule, Duplicated, derivative_rule};

/// Counts its calls in test builds; copies in chunks otherwise.
#[derivative_rule(copy)]
fn copy_counted(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[cfg(test)] #[inert] calls: &mut usize,
    #[cfg(not(test))] #[inert] chunk: usize,
) {
    #[cfg(test)]
    {
        *calls += 1;
    }
    #[cfg(not(test))]
    for (d, s) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
        d.copy_from_slice(s);
    }
    #[cfg(test)]
    dst.copy_from_slice(src);
}

fn main() {
    let (x, mut y, mut dy) = ([1.0f32, 2.0], [0.0f32; 2], [0.0f32; 2]);
    // Outside tests, the rule object takes `chunk` alone.
    copy_counted_rule(1)
        .forward(Duplicated::new(&mut y[..], &mut dy[..]), Const(&x[..]))
        .unwrap();
    assert_eq!(y, x);
}
