//! The checks: every problem reported in one pass, and the stages run one by one on tokens.

use super::{errors, expand};
use crate::args::parse_args;
use crate::check::check;
use crate::ctxt::Ctxt;
use crate::model::MemKind;
use crate::parse::{Item, parse_fn};
use crate::plan::Order;

#[test]
fn every_problem_is_reported_in_one_pass() {
    let out = expand(
        "copy, forwrd = f, dst = gpu",
        "async fn f(#[dest] d: &[i32], #[src] s: &mut [f32], #[len] n: usize) -> usize { n }",
    );
    // forwrd, gpu, async, return type, immutable dst, mutable src, #[dest], #[len], i32, dst = .
    assert!(errors(&out) >= 8, "{} errors in {out}", errors(&out));
}

#[test]
fn on_error_the_function_and_stubs_are_still_emitted() {
    let out = expand(
        "copy",
        "fn copy_into(#[dst] dst: &[f32], #[src] src: &[f32]) {}",
    );
    assert_eq!(errors(&out), 1, "{out}");
    assert!(out.contains("fn copy_into ("), "{out}");
    assert!(
        out.contains("fn copy_into_rule"),
        "missing the stand-in in {out}"
    );
    // Something that is not a function comes back unchanged, with the error.
    let out = expand("copy", "struct S { x: f32 }");
    assert_eq!(errors(&out), 1, "{out}");
    assert!(out.contains("struct S"), "{out}");
}

#[test]
fn the_stages_run_on_tokens() {
    let cx = Ctxt::new();
    let args = parse_args(&cx, "copy, dst = device, src = host".parse().unwrap());
    assert!(args.kind.is_some() && args.dst_kind.is_some() && args.src_kind.is_some());
    let item = "unsafe fn up(#[dst] d: *mut f32, #[src] s: *const f32, #[len] n: usize, st: &CudaStream) {}";
    let Item::Rule(rule) = parse_fn(&cx, args, item.parse().unwrap()) else {
        panic!("a function parses as a rule");
    };
    let plan = check(&cx, &rule).expect("a valid pointer rule passes the checks");
    let [dst, src] = plan.buffer_params();
    assert_eq!((dst, src), (Some(0), Some(1)));
    assert!(matches!(plan.order, Order::Stream(Some(3))));
    assert!(
        plan.extent()
            .is_some_and(|e| e.len == Some(2) && e.dst_kind == MemKind::Device)
    );
    assert!(plan.unsafety && !cx.has_errors());
    assert!(cx.take().is_empty());
}
