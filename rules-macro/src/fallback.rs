//! What is emitted when a rule has an error: the user's function (so the rest of the crate keeps
//! compiling and editors keep working) and a harmless stand-in for the generated rule item, so
//! that its callers see the rule's error and nothing else: no "cannot find function", no
//! "no method named `forward`".

use crate::expand::{allowances, private_path, rule_name};
use crate::parse::Rule;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

/// A stand-in for `name_rule`: a function of any arguments (configured like the primal's)
/// returning the runtime's stub, whose methods take any activities and are never run (the crate
/// does not compile). One activity for the kinds with one buffer (memset, send, recv), two
/// otherwise. Not emitted for methods, whose rule could not be placed anyway.
pub fn stubs(rule: &Rule) -> TokenStream {
    if rule.has_receiver() {
        return TokenStream::new();
    }
    let p = private_path(rule);
    let name = rule_name(rule);
    let vis = &rule.func.vis;
    let allow = allowances();
    let tys: Vec<Ident> = (0..rule.params.len())
        .map(|i| format_ident!("__A{}", i))
        .collect();
    let params = rule.params.iter().zip(&tys).map(|(prm, ty)| {
        let cfg = &prm.cfg;
        quote!(#(#cfg)* _: #ty)
    });
    let generics = rule.params.iter().zip(&tys).map(|(prm, ty)| {
        let cfg = &prm.cfg;
        quote!(#(#cfg)* #ty)
    });
    let one = rule.kind().is_some_and(|k| k.one_buffer());
    let stub = if one {
        quote!(RuleStub1)
    } else {
        quote!(RuleStub2)
    };
    quote! {
        #[doc(hidden)]
        #allow
        #[allow(missing_docs, clippy::unimplemented)]
        #vis fn #name<#(#generics),*>(#(#params),*) -> #p::#stub {
            ::core::unimplemented!("the rule has a compile error")
        }
    }
}
