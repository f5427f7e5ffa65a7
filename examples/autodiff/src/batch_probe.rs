#![feature(autodiff)]
//! Batch (vector) mode through a bridged rule: `#[autodiff_reverse(df, 2, ..)]` and
//! `#[autodiff_forward(df, 2, ..)]` on a function that calls a `#[derivative_rule(.., autodiff)]`
//! bridge. Enzyme of this toolchain cannot pass a batch width to a custom rule: it calls the
//! wrapper it builds around the registered augmented primal (or forward rule) with `[2 x ptr]`
//! shadows where the wrapper, like the rule, takes one `ptr` (docs/autodiff.md, "Batch (vector)
//! mode").
//! So the build with `batch-reverse` or `batch-forward` fails; `tools/autodiff.sh` checks that
//! it fails that way, and that the same function without the bridge (feature `batch-probe`
//! alone) builds and gives each lane its own exact gradient, so that a toolchain on which the
//! bridged build starts to work is noticed (this program then checks what it computes).
use rules_runtime::autodiff::{Calls, calls, take_error};
use rules_runtime::prelude::*;
use std::autodiff::autodiff_reverse;

/// A host copy, bridged: the rule Enzyme would have to call with two shadows.
#[derivative_rule(copy, dst = host, src = host, autodiff)]
unsafe fn probe_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract (valid, non-overlapping ranges of `n` elements).
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

const X: [f32; 3] = [1.0, 2.0, 3.0];
/// The seeds of the two lanes' outputs: lane k's gradient is s_k · 2x.
const SEEDS: [f32; 2] = [1.0, 2.0];

/// Enzyme's batch mode without a custom rule: out = Σ x_i².
#[autodiff_reverse(df_plain, 2, Duplicated, Duplicated)]
fn f_plain(x: &[f32; 3], out: &mut f32) {
    *out = x.iter().map(|v| v * v).sum();
}

/// The same through the bridge: out = Σ copy(x)_i².
#[cfg(feature = "batch-reverse")]
#[autodiff_reverse(df_bridged, 2, Duplicated, Duplicated)]
fn f_bridged(x: &[f32; 3], out: &mut f32) {
    let mut h = [1.0f32; 3];
    probe_copy_ad(&mut h, x, 3);
    *out = h.iter().map(|v| v * v).sum();
}

/// Forward mode, two tangents, through the bridge.
#[cfg(feature = "batch-forward")]
#[std::autodiff::autodiff_forward(df_bridged_fwd, 2, Dual, Dual)]
fn f_bridged_fwd(x: &[f32; 3]) -> f32 {
    let mut h = [1.0f32; 3];
    probe_copy_ad(&mut h, x, 3);
    h.iter().map(|v| v * v).sum()
}

/// One lane pair's check: `dx[k] == SEEDS[k] · 2x`.
fn lanes_exact(dx: &[[f32; 3]; 2]) -> bool {
    (0..2).all(|k| dx[k] == X.map(|v| SEEDS[k] * 2.0 * v))
}

fn report(name: &str, out: f32, dx: [[f32; 3]; 2], c: Calls, want: Calls) -> bool {
    let err = take_error();
    let ok = out == 14.0 && lanes_exact(&dx) && c == want && err.is_none();
    println!(
        "{name}: out = {out} (want 14), dx lane 0 = {:?}, lane 1 = {:?} (want 2x, 4x), bridge calls = {c:?} (want {want:?}), error = {err:?} -> {}",
        dx[0],
        dx[1],
        if ok { "OK" } else { "WRONG" }
    );
    ok
}

fn main() {
    let mut ok = true;
    let c0 = calls();
    let (mut d0, mut d1, mut out) = ([0.0f32; 3], [0.0f32; 3], 0.0f32);
    let (mut s0, mut s1) = (SEEDS[0], SEEDS[1]);
    df_plain(&X, &mut d0, &mut d1, &mut out, &mut s0, &mut s1);
    ok &= report(
        "batch width 2, reverse, no bridge",
        out,
        [d0, d1],
        calls() - c0,
        Calls::default(),
    );
    #[cfg(feature = "batch-reverse")]
    {
        let c0 = calls();
        let (mut d0, mut d1, mut out) = ([0.0f32; 3], [0.0f32; 3], 0.0f32);
        let (mut s0, mut s1) = (SEEDS[0], SEEDS[1]);
        df_bridged(&X, &mut d0, &mut d1, &mut out, &mut s0, &mut s1);
        // Both lanes in one augmented primal and one reverse (one fused launch), as a rule of
        // width 2 (`Duplicated::batch`) would run them.
        let want = Calls {
            augmented_primal: 1,
            reverse: 1,
            ..Calls::default()
        };
        ok &= report(
            "batch width 2, reverse, through the bridge",
            out,
            [d0, d1],
            calls() - c0,
            want,
        );
        println!(
            "batch width 2 through a bridge BUILT: update docs/autodiff.md (Batch (vector) mode)"
        );
    }
    #[cfg(feature = "batch-forward")]
    {
        let c0 = calls();
        let (e0, e1) = ([1.0f32, 0.0, 0.0], [0.0f32, 1.0, 0.0]);
        let r = df_bridged_fwd(&X, &e0, &e1);
        let c = calls() - c0;
        let okf = r == [14.0, 2.0, 4.0] && take_error().is_none();
        println!(
            "batch width 2, forward, through the bridge: [f, df.e1, df.e2] = {r:?} (want [14.0, 2.0, 4.0]), bridge calls = {c:?} -> {}",
            if okf { "OK" } else { "WRONG" }
        );
        println!(
            "batch width 2 through a bridge BUILT: update docs/autodiff.md (Batch (vector) mode)"
        );
        ok &= okf;
    }
    println!("{}", if ok { "ALL OK" } else { "SOME WRONG" });
    std::process::exit(if ok { 0 } else { 1 });
}
