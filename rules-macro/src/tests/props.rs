//! Property tests: the macro never panics (and never drops an error unreported, which the error
//! context would turn into a panic), whatever attribute and item it is given.

use super::inputs::{attr_args, config, rule_signature, signature, token_stream};
use crate::args::parse_args;
use crate::check::check;
use crate::ctxt::Ctxt;
use crate::expand::derivative_rule;
use crate::parse::{Item, parse_fn};
use proc_macro2::TokenStream;
use proptest::prelude::*;

// ---- Property tests: the macro never panics. ----

/// When the user's item is one rustc can parse, so is the macro's output (errors are
/// `compile_error!` items, stubs and generated rules are items).
fn assert_items(item: &TokenStream, out: &TokenStream) {
    if syn::parse2::<syn::File>(item.clone()).is_err() {
        return; // the user's own tokens come back as they were
    }
    if let Err(e) = syn::parse2::<syn::File>(out.clone()) {
        panic!("the expansion is not a list of items ({e}): {out}");
    }
}

proptest! {
    #![proptest_config(config())]

    /// Arbitrary attribute arguments: parsed or reported, never a panic.
    #[test]
    fn arbitrary_attribute_arguments_never_panic(attr in attr_args()) {
        let cx = Ctxt::new();
        let _ = parse_args(&cx, attr.clone());
        let _ = cx.take();
        let item: TokenStream = "fn f(#[dst] d: &mut [f32], #[src] s: &[f32]) {}".parse().unwrap();
        assert_items(&item, &derivative_rule(attr, item.clone()));
    }

    /// Arbitrary signatures through every stage: errors are fine, panics are bugs, and the output
    /// is always well-formed items.
    #[test]
    fn arbitrary_signatures_never_panic(attr in attr_args(), sig in signature()) {
        let Ok(item) = sig.parse::<TokenStream>() else {
            return Ok(());
        };
        let cx = Ctxt::new();
        let args = parse_args(&cx, attr.clone());
        if let Item::Rule(rule) = parse_fn(&cx, args, item.clone()) {
            let _ = check(&cx, &rule);
        }
        let _ = cx.take();
        let out = derivative_rule(attr, item.clone());
        assert_items(&item, &out);
    }

    /// Plausible rules: the same, and a rule that passes every check expands to its rule item
    /// (a struct and its trait impl), and they are well-formed items.
    #[test]
    fn plausible_rules_never_panic((attr, sig) in rule_signature()) {
        let item: TokenStream = sig.parse().unwrap();
        let out = derivative_rule(attr.parse().unwrap(), item.clone());
        assert_items(&item, &out);
        let text = out.to_string();
        if !text.contains("compile_error") {
            prop_assert!(text.contains("f_rule") && text.contains("fn __primal"), "{}", text);
        }
    }

    /// Arbitrary tokens as the item: reported, never a panic.
    #[test]
    fn arbitrary_items_never_panic(attr in attr_args(), item in token_stream(12)) {
        let out = derivative_rule(attr, item);
        // Not asserted to be items: the user's own tokens come back as they were.
        let _ = out.to_string();
    }
}
