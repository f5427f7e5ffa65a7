//! What is emitted when a rule has an error: the user's function (so the rest of the crate keeps
//! compiling and editors keep working) and a harmless stand-in for each generated function, so
//! that their callers see the rule's error and nothing else: no "cannot find function", no
//! arity error.

use crate::expand::{Names, allowances, private_path, tape_type};
use crate::parse::Rule;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

/// Stand-ins for the three generated functions: any arguments (configured like the primal's),
/// the right result types, never run (the crate does not compile). Not emitted for methods,
/// whose generated functions could not be placed anyway.
pub fn stubs(rule: &Rule) -> TokenStream {
    if rule.has_receiver() {
        return TokenStream::new();
    }
    let p = private_path(rule);
    let names = Names::new(rule);
    let vis = &rule.func.vis;
    let allow = allowances();
    let tys: Vec<Ident> = (0..rule.params.len())
        .map(|i| format_ident!("__A{}", i))
        .collect();
    let params: Vec<TokenStream> = rule
        .params
        .iter()
        .zip(&tys)
        .map(|(prm, ty)| {
            let cfg = &prm.cfg;
            quote!(#(#cfg)* _: #ty)
        })
        .collect();
    let generics: Vec<TokenStream> = rule
        .params
        .iter()
        .zip(&tys)
        .map(|(prm, ty)| {
            let cfg = &prm.cfg;
            quote!(#(#cfg)* #ty)
        })
        .collect();
    let tape_ty = tape_type(rule.kind(), rule.args.restore.is_some(), &p);
    let stub = |name: &Ident, ok: TokenStream, tape: bool| {
        let tape = tape.then(|| quote!(_: #tape_ty,));
        quote! {
            #[doc(hidden)]
            #allow
            #[allow(missing_docs, dead_code, clippy::unimplemented)]
            #vis fn #name<#(#generics),*>(#tape #(#params),*) -> ::core::result::Result<#ok, #p::Error> {
                ::core::unimplemented!("the rule has a compile error")
            }
        }
    };
    let f = stub(&names.forward, quote!(()), false);
    let a = stub(&names.augmented, tape_ty.clone(), false);
    let r = stub(&names.reverse, quote!(()), true);
    quote!(#f #a #r)
}
