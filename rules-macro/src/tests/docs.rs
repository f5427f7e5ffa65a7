//! The docs of the generated rules: the sections rustdoc and clippy expect, and the contract of
//! `unsafe` rules.

use super::{GENERATED, docs_of, errors, expand};

/// What the `# Errors` section of every copy rule promises.
fn assert_errors_contract(docs: &str) {
    for promise in [
        "# Errors\nEvery argument and every lane is checked before the first write",
        "`ContextMismatch`, `NoStream`",
        "`UnsupportedKinds`",
        "`LengthMismatch`",
        "`PartialOverlap`, `Aliasing`",
        "so such an `Err` changes nothing. `Primal`",
        "and `Driver` report a failure of the work itself",
    ] {
        assert!(docs.contains(promise), "missing {promise:?} in {docs}");
    }
}

#[test]
fn a_pointer_rule_documents_validity_aliasing_and_lifetime() {
    let out = expand(
        "copy, dst = device, src = host",
        "pub unsafe fn f(#[dst] d: *mut f32, #[src] s: *const f32, #[len] n: usize, \
         #[dst_offset] at: usize, st: &CudaStream) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for name in GENERATED {
        assert!(out.contains(&format!("unsafe fn {name}")), "{name}: {out}");
        let docs = docs_of(&out, name);
        assert_errors_contract(&docs);
        assert!(docs.contains("`RangeOverflow`"), "{name}: {docs}");
        assert_eq!(
            docs.contains("`TapeMismatch`"),
            name == "f_reverse",
            "{name}: {docs}"
        );
        for sentence in [
            // Validity of the shadows, in the declared kinds.
            "# Safety\nThe contract of [`f`], for the primal pointers and again for each lane's \
             shadow pointers.",
            "Every shadow pointer, like its primal, must be valid and aligned for its box (`offset + n` elements",
            "(`dst = device`, `src = host`)",
            // Aliasing.
            "No shadow may alias a primal, nor a shadow of another lane;",
            "shadows may be the same range but must not partially overlap (nor may the primals).",
            // Lifetime.
            "The call returns before the GPU work it enqueues on the copy's stream has completed.",
            "Every pointer must stay valid until that work has completed, and until then nothing may \
             access the memory except work ordered on that stream",
        ] {
            assert!(
                docs.contains(sentence),
                "{name}: missing {sentence:?} in {docs}"
            );
        }
    }
}

#[test]
fn a_pointer_rule_without_a_stream_is_valid_until_its_work_completes() {
    let out = expand(
        "copy, dst = pinned, src = host",
        "unsafe fn f(#[dst] d: *mut f64, #[src] s: *const f64, #[len] n: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for name in GENERATED {
        let docs = docs_of(&out, name);
        assert!(
            docs.contains("(`dst = pinned`, `src = host`)"),
            "{name}: {docs}"
        );
        assert!(
            docs.contains("No shadow may alias a primal, nor a shadow of another lane;"),
            "{name}: {docs}"
        );
        assert!(
            docs.contains(
                "Every pointer must stay valid, and nothing else may access the memory, until the \
                 call and any work [`f`] leaves pending have completed."
            ),
            "{name}: {docs}"
        );
        assert!(
            !docs.contains("copy's stream has completed"),
            "{name}: {docs}"
        );
    }
}

#[test]
fn a_safe_slice_rule_has_errors_but_no_safety_section() {
    let out = expand(
        "copy",
        "pub fn f(#[dst] dst: &mut [f32], #[src] src: &[f32]) { dst.copy_from_slice(src) }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(!out.contains("unsafe fn"), "{out}");
    for name in GENERATED {
        let docs = docs_of(&out, name);
        assert_errors_contract(&docs);
        assert!(!docs.contains("`RangeOverflow`"), "{name}: {docs}");
        assert!(!docs.contains("# Safety"), "{name}: {docs}");
    }
}

#[test]
fn an_unsafe_slice_rule_has_the_primals_contract_and_no_pointer_clauses() {
    let out = expand(
        "copy",
        "unsafe fn f(#[dst] dst: &mut [f32], #[src] src: &[f32]) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for name in GENERATED {
        let docs = docs_of(&out, name);
        assert_errors_contract(&docs);
        assert!(
            docs.contains(
                "# Safety\nThe contract of [`f`]: the rule calls it with the primal buffers, and \
                 again with each lane's shadows."
            ),
            "{name}: {docs}"
        );
        assert!(!docs.contains("`offset + n`"), "{name}: {docs}");
    }
}
