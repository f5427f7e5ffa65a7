//! The docs of the generated rule item: how to call the three rules, and the contract of an
//! `unsafe` primal on references (pointer rules' contract is the runtime trait's).

use super::{docs_of, errors, expand};

/// What the docs of every rule say: the call and the three methods.
fn assert_calls(docs: &str, call: &str, trait_name: &str, acts: &str) {
    for promise in [
        format!("`{call}`"),
        format!("the methods of `{trait_name}`"),
        format!("`forward({acts})`, the tangent rule"),
        format!("`augmented_primal({acts})`, which runs [`f`] and returns the tape"),
        format!("`reverse(tape, {acts})`"),
    ] {
        assert!(docs.contains(&promise), "missing {promise:?} in {docs}");
    }
}

#[test]
fn a_pointer_rule_says_its_methods_are_unsafe_and_its_memory_kinds() {
    let out = expand(
        "copy, dst = device, src = host",
        "pub unsafe fn f(#[dst] d: *mut f32, #[src] s: *const f32, #[len] n: usize, \
         #[dst_offset] at: usize, st: &CudaStream) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    let docs = docs_of(&out, "f_rule");
    assert_calls(&docs, "f_rule(n, at, st)", "RawCopyRule", "dst, src");
    assert!(docs.contains("(`unsafe`: the pointers' contract"), "{docs}");
    assert!(docs.contains("`dst = device`, `src = host`"), "{docs}");
    assert!(
        !docs.contains("# Safety"),
        "the struct is safe to build: {docs}"
    );
}

#[test]
fn a_safe_slice_rule_documents_its_calls_and_no_safety() {
    let out = expand(
        "copy",
        "fn f(#[dst] dst: &mut [f32], #[src] src: &[f32], #[inert] by: f32) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    let docs = docs_of(&out, "f_rule");
    assert_calls(&docs, "f_rule(by)", "CopyRule", "dst, src");
    assert!(
        docs.contains("`d_src += d_dst`, then `d_dst ← 0`"),
        "{docs}"
    );
    assert!(
        !docs.contains("# Safety") && !docs.contains("`unsafe`"),
        "{docs}"
    );
}

#[test]
fn an_unsafe_slice_rule_has_an_unsafe_constructor_with_the_primals_contract() {
    let out = expand(
        "copy",
        "unsafe fn f(#[dst] dst: &mut [f32], #[src] src: &[f32]) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(out.contains("unsafe fn f_rule"), "{out}");
    let docs = docs_of(&out, "f_rule");
    assert!(
        docs.contains(
            "# Safety\nEvery call of the rule's methods must meet the contract of [`f`]: they call \
             it with the primal buffers, and again with each lane's shadows."
        ),
        "{docs}"
    );
}

#[test]
fn region_and_fill_rules_say_what_their_reverse_does() {
    let out = expand(
        "fill, restore",
        "fn f(#[dst] d: &mut [f32], #[value] v: f32) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    let docs = docs_of(&out, "f_rule");
    assert_calls(&docs, "f_rule()", "FillRule", "dst, value");
    assert!(docs.contains("returns `d_v = Σ_R d_dst`"), "{docs}");
    assert!(
        docs.contains("then the old destination written back"),
        "{docs}"
    );
}
