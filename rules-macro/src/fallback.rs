//! What is emitted when a rule has an error: the user's function (so the rest of the crate keeps
//! compiling and editors keep working) and a harmless stand-in for the generated rule item, so
//! that its callers see the rule's error and nothing else: no "cannot find function", no
//! "no method named `forward`".

use crate::expand::names::{allowances, private_path, rule_name};
use crate::model::{Kind, Role};
use crate::parse::Rule;
use crate::types::{DIFFERENTIABLE, elem_name};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, Type};

/// A stand-in for `name_rule`: a function of any arguments in the places of the primal's other
/// (not buffer) arguments, configured like them,
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
    // The rule object takes the parameters other than the buffers (a fill's value is one; a
    // memset's bit pattern is passed through).
    let fill = rule.kind() == Some(Kind::Fill);
    let rest: Vec<_> = rule
        .params
        .iter()
        .filter(|p| {
            !(p.has_role(Role::Dst) || p.has_role(Role::Src) || fill && p.has_role(Role::Value))
        })
        .collect();
    let tys: Vec<Ident> = (0..rest.len()).map(|i| format_ident!("__A{}", i)).collect();
    let params = rest.iter().zip(&tys).map(|(prm, ty)| {
        let cfg = &prm.cfg;
        quote!(#(#cfg)* _: #ty)
    });
    let generics = rest.iter().zip(&tys).map(|(prm, ty)| {
        let cfg = &prm.cfg;
        quote!(#(#cfg)* #ty)
    });
    let one = rule.kind().is_some_and(|k| k.one_buffer());
    let stub = if let Some(v) = fill_value_type(rule) {
        quote!(RuleStubFill<#v>)
    } else if one {
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

/// The value type of a fill, when the stand-in can name it: an element type, an alias or any
/// path without arguments that is not one of the function's type parameters (a value taken by
/// reference by mistake counts as the value). The stand-in's reverse returns it per lane, as a
/// fill by value's would; for a fill from a one-element buffer of a type of that shape, whose
/// reverse returns `()`, a caller that names the result sees a mismatch, which only follows an
/// error already reported.
fn fill_value_type(rule: &Rule) -> Option<Type> {
    if rule.kind() != Some(Kind::Fill) {
        return None;
    }
    let v = rule.params.iter().find(|p| p.has_role(Role::Value))?;
    let ty = match &v.ty {
        Type::Reference(r) => (*r.elem).clone(),
        other => other.clone(),
    };
    let name = elem_name(&ty)?;
    // A type parameter of the function cannot be named by the stand-in.
    let generic = rule
        .func
        .sig
        .generics
        .type_params()
        .any(|t| t.ident == name);
    let known = DIFFERENTIABLE.contains(&name.as_str()) || !name.contains('<');
    (known && !generic).then_some(ty)
}
