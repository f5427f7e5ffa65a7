//! Tests of the stages on `proc_macro2` tokens, without a compiler, one file per stage: what the
//! checks report, what the expansion and its docs contain, and property tests that the macro
//! never panics, whatever it is given.

mod autodiff;
mod check;
mod docs;
mod expand;
mod inputs;
mod place;
mod props;

use crate::expand::derivative_rule;

pub fn expand(attr: &str, item: &str) -> String {
    derivative_rule(attr.parse().unwrap(), item.parse().unwrap()).to_string()
}

/// The number of `compile_error!` invocations in an expansion.
pub fn errors(out: &str) -> usize {
    out.matches("compile_error").count()
}

/// The documentation the expansion gives the item `name` (a struct or a function: its `#[doc]`
/// strings, joined).
pub fn docs_of(out: &str, name: &str) -> String {
    let file: syn::File = syn::parse_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let attrs: Vec<&syn::Attribute> = file
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) if f.sig.ident == name => Some(&f.attrs),
            syn::Item::Struct(s) if s.ident == name => Some(&s.attrs),
            _ => None,
        })
        .flatten()
        .collect();
    assert!(!attrs.is_empty(), "no item {name} in {out}");
    let mut docs = String::new();
    for attr in attrs {
        if let syn::Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            docs.push_str(&s.value());
            docs.push('\n');
        }
    }
    docs
}
