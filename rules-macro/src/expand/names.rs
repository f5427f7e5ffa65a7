//! The generated items' names and paths, and the lints they allow: shared by the generator and by
//! the stand-in a rule with a compile error gets (`crate::fallback`).

use crate::model::DEFAULT_CRATE;
use crate::parse::Rule;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

/// The generated item's name: `<name>_rule`, or the attribute's `rule = name`.
pub fn rule_name(rule: &Rule) -> Ident {
    rule.args
        .rule
        .clone()
        .unwrap_or_else(|| format_ident!("{}_rule", rule.func.sig.ident))
}

/// `<crate>::__private`.
pub fn private_path(rule: &Rule) -> TokenStream {
    match &rule.args.krate {
        Some(krate) => quote!(#krate::__private),
        None => {
            let krate = Ident::new(DEFAULT_CRATE, Span::call_site());
            quote!(::#krate::__private)
        }
    }
}

/// Lints the generated items must not trigger in the user's crate, whatever it denies (the
/// lint checks are `ui-tests/src/lib.rs` and `ui-tests/pass/hygiene.rs`). Short: every rule
/// carries them.
pub fn allowances() -> TokenStream {
    quote!(#[allow(dead_code, non_camel_case_types, single_use_lifetimes, unused_lifetimes)])
}

/// The lints the rule struct could trigger: an unused rule, a name in snake case.
pub(super) fn struct_allowances() -> TokenStream {
    quote!(#[allow(dead_code, non_camel_case_types)])
}

/// The lints the impl could trigger: its lifetimes (one may be named only once), a runtime item
/// the user also imported (named in full, `<crate>::__private::..`).
pub(super) fn impl_allowances() -> TokenStream {
    quote!(#[allow(single_use_lifetimes, unused_lifetimes, unused_qualifications)])
}
