#![feature(autodiff)]
//! The seed, differentiated by Rust's `std::autodiff` (Enzyme inside rustc) through this
//! project's rules:
//!
//!     f(x) = sum(abs2, to_host(to_device(x))),  x = [1, 2, 3]  =>  dx = 2x = [2, 4, 6]
//!
//! and beside it a pitched 2D round trip (host -> device rows -> host: dx = 2x in the box, 0 in
//! the padding), a 3D one, memsets and fills (a fill's value differentiated), and the seed, the
//! 2D round trip, a memset and a fill through CUDA arrays.
//!
//! First with the runtime's ready-made copies (`ready.rs`: `rules_runtime::autodiff::copies`,
//! cudarc's copies and memset, registered with Enzyme by the runtime): no rule of the example's
//! own, no `unsafe`, no driver call. Then with rules of its own (`rules.rs`): raw-pointer
//! `#[derivative_rule(<kind>, .., autodiff)]` primitives. The
//! attribute's `autodiff` option generates (with the runtime's `autodiff` feature, Cargo.toml), the
//! `extern "C"` primal Enzyme cannot see into, its augmented primal and reverse (the rule
//! object's own, so the shadow work is the rule's, on the copy's stream), the registration
//! static, and `<name>_ad`, the safe function called below. No rule is called by hand.
//!
//! `autodiff-seed host` runs the GPU-free cases (host copies with the same machinery);
//! `autodiff-seed` runs them and the GPU ones (device, pinned, unified; needs a GPU);
//! `autodiff-seed loop` runs only the loop case (`looped.rs`), on the host and, with a GPU, on
//! the device.
use rules::*;
use rules_runtime::autodiff::{AdBuf, AdPair, Calls, calls, take_error};
use std::autodiff::{autodiff_forward, autodiff_reverse};

mod arrays;
mod gpu;
mod host;
mod looped;
mod ready;
mod rules;

/// The 2D box of `x` and `h`: 3 rows of 3 elements, rows 16 bytes (4 elements) apart; the
/// fourth element of each row is padding, which no copy may touch.
const PITCH_X: usize = 16;
const W: usize = 3;
const H: usize = 3;

/// The sum of squares of the box of a 3 × 4 pitched buffer (its padding left out).
fn box_sum_sq(h: &[f32; 12]) -> f32 {
    let mut y = 0.0;
    for r in 0..H {
        for c in 0..W {
            let v = h[r * (PITCH_X / 4) + c];
            y += v * v;
        }
    }
    y
}

const X: [f32; 3] = [1.0, 2.0, 3.0];
const WANT: [f32; 3] = [2.0, 4.0, 6.0];

/// Bridge calls since `before`.
fn since(before: Calls) -> Calls {
    calls() - before
}

/// Reverse mode: `copies` augmented primals and reverses, nothing else.
fn reverse_calls(copies: usize) -> Calls {
    Calls {
        augmented_primal: copies,
        reverse: copies,
        ..Calls::default()
    }
}

fn report(name: &str, y: f32, dx: [f32; 3], c: Calls, copies: usize, extra: &str) -> bool {
    let err = take_error();
    let ok = y == 14.0 && dx == WANT && c == reverse_calls(copies) && err.is_none();
    println!(
        "{name}: f = {y}, dx = {dx:?} (want {WANT:?}), augmented primals = {}, reverses = {} (want {copies} each){extra}, error = {err:?} -> {}",
        c.augmented_primal,
        c.reverse,
        if ok { "OK" } else { "WRONG" }
    );
    ok
}

/// Forward mode: the gradient, one unit tangent at a time; `copies` forward rules per sweep.
fn report_fwd(name: &str, sweep: impl Fn(&[f32; 3]) -> (f32, f32), copies: usize) -> bool {
    let c0 = calls();
    let mut grad = [0.0f32; 3];
    let mut y = 0.0;
    for (i, g) in grad.iter_mut().enumerate() {
        let mut e = [0.0f32; 3];
        e[i] = 1.0;
        (y, *g) = sweep(&e);
    }
    let c = since(c0);
    let err = take_error();
    let want = Calls {
        forward: 3 * copies,
        ..Calls::default()
    };
    let ok = y == 14.0 && grad == WANT && c == want && err.is_none();
    println!(
        "{name}: f = {y}, (df.e1, df.e2, df.e3) = {grad:?} (want {WANT:?}), forward rules = {} (want {}), error = {err:?} -> {}",
        c.forward,
        3 * copies,
        if ok { "OK" } else { "WRONG" }
    );
    ok
}

/// The 2D input: a 3 × 3 box in rows of 4 elements, its padding 100 (f would see it if a copy
/// read padding), and the gradient: 2x in the box, 0 in the padding.
const X2: [f32; 12] = [1., 2., 3., 100., 4., 5., 6., 100., 7., 8., 9., 100.];
const WANT2: [f32; 12] = [2., 4., 6., 0., 8., 10., 12., 0., 14., 16., 18., 0.];
/// f(X2) = 1² + ... + 9².
const F2: f32 = 285.0;

/// A 2D (or memset) case: `f`, `dx` against their wants, the calls, no error.
fn report_any(
    name: &str,
    (y, want_y): (f32, f32),
    dx: &[f32],
    want: &[f32],
    c: Calls,
    copies: usize,
    extra: &str,
) -> bool {
    let err = take_error();
    let ok = y == want_y && dx == want && c == reverse_calls(copies) && err.is_none();
    println!(
        "{name}: f = {y} (want {want_y}), dx = {dx:?} (want {want:?}), augmented primals = {}, reverses = {} (want {copies} each){extra}, error = {err:?} -> {}",
        c.augmented_primal,
        c.reverse,
        if ok { "OK" } else { "WRONG" }
    );
    ok
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    let mut ok = if which == "loop" {
        looped::run_host_loop()
    } else {
        ready::run_host() & host::run_host() & looped::run_host_loop()
    };
    if which != "host" {
        if rules_runtime::cuda::driver_available() {
            let gpu = if which == "loop" {
                gpu::run_gpu_loop()
            } else {
                gpu::run_gpu()
            };
            match gpu {
                Ok(g) => ok &= g,
                Err(e) => {
                    println!("GPU cases failed: {e}");
                    ok = false;
                }
            }
        } else {
            println!("GPU cases SKIPPED: no CUDA driver on this machine");
        }
    }
    println!("{}", if ok { "ALL OK" } else { "SOME WRONG" });
    std::process::exit(if ok { 0 } else { 1 });
}
