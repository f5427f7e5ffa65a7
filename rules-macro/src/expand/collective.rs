//! Code generation of collective rules: the user's function unchanged, and next to it the forward
//! rule and the augmented-primal + reverse pair, each a thin call into the runtime's collective
//! bodies (`rules_runtime::collective`). As for copies, what the macro cannot see becomes a bound at
//! the user's own tokens: the communicator (`AsComm`), each rank (`RankArg`), each buffer
//! (`CollectiveDst` / `CollectiveSrc`), a generic element (`NcclElement`), the return type.

use super::{Names, allowances, bound_at, primal_call, private_path};
use crate::check::CheckedCollective;
use crate::docs::CollectiveDocs;
use crate::parse::Rule;
use crate::types::{elem_name, element_of, name_lifetimes};
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::{Ident, Lifetime, ReturnType, Type};

/// Element types NCCL sums, by canonical name: no bound is needed for them.
const NCCL_ELEMENTS: &[&str] = &["f32", "f64", "f16", "bf16"];

/// The generated rules of one checked collective.
pub fn expand(rule: &Rule, c: &CheckedCollective) -> TokenStream {
    let p = private_path(rule);
    let mut fresh: Vec<Lifetime> = Vec::new();
    let mut bounds = TokenStream::new();

    // The communicator and the ranks: passed to the runtime by reference, bound at their types.
    let (comm, comm_bound) = by_ref(rule, c.comm, &quote!(#p::AsComm), &mut fresh);
    bounds.extend(comm_bound);
    let mut ranks = Vec::new();
    for &i in &c.ranks {
        let (arg, bound) = by_ref(rule, i, &quote!(#p::RankArg), &mut fresh);
        ranks.push(arg);
        bounds.extend(bound);
    }
    let kind = format_ident!("{}", c.kind.name());
    let ctor = quote!(#p::Collective::#kind(#comm #(, #ranks)*));

    // The buffers: activities `__Dst` / `__Src` over the pointee types the user wrote.
    let mut named = |ty: &Type| {
        let mut ty = ty.clone();
        name_lifetimes(&mut ty, &mut fresh);
        ty
    };
    let dst = c.dst.as_ref().map(|(i, t)| (*i, named(t)));
    let src = c.src.as_ref().map(|(i, t)| (*i, named(t)));
    if let Some((_, x)) = &dst {
        bounds.extend(quote!(__Dst: #p::DstArg<#x>,));
        bounds.extend(bound_at(x, &quote!(#p::CollectiveDst)));
        bounds.extend(element_bound(&p, x));
    }
    if let Some((_, y)) = &src {
        bounds.extend(quote!(__Src: #p::SrcArg<#y>,));
        bounds.extend(bound_at(y, &quote!(#p::CollectiveSrc)));
        bounds.extend(element_bound(&p, y));
    }
    if let (Some((_, x)), Some((_, y))) = (&dst, &src) {
        bounds.extend(quote! {
            <__Dst as #p::Activity>::Width: #p::SameWidth<<__Src as #p::Activity>::Width>,
        });
        if x.to_token_stream().to_string() != y.to_token_stream().to_string() {
            // The very bound the runtime asks for: the solver then needs no normalisation of
            // `X`'s element, which a where-clause on `X` would keep it from doing.
            let target = quote!(<#x as #p::ShadowRead>::Elem);
            bounds.extend(bound_at(y, &quote!(#p::ShadowMemory<Elem = #target>)));
        }
    }
    if let ReturnType::Type(_, ty) = &rule.func.sig.output {
        let mut ty = (**ty).clone();
        name_lifetimes(&mut ty, &mut fresh);
        bounds.extend(bound_at(&ty, &quote!(#p::PrimalOutcome)));
    }

    // The bodies.
    let call = primal_call(
        &p,
        rule,
        dst.as_ref().map(|d| d.0),
        src.as_ref().map(|s| s.0),
    );
    let tape = tape_name(rule);
    let name = |i: usize| &rule.params[i].name;
    let (fwd, aug, rev) = match (&dst, &src) {
        (Some((di, x)), Some((si, y))) => {
            let (d, s) = (name(*di), name(*si));
            let f = quote!(|__d: &mut #x, __s: &#y| #call);
            (
                quote!(#p::collective_forward(#ctor, #d, #s, #f)),
                quote!(#p::collective_augmented_primal(#ctor, #d, #s, #f)),
                quote!(#p::collective_reverse(#ctor, #tape, #d, #s)),
            )
        }
        (None, Some((si, y))) => {
            let s = name(*si);
            let f = quote!(|__s: &#y| #call);
            (
                quote!(#p::send_forward(#ctor, #s, #f)),
                quote!(#p::send_augmented_primal(#ctor, #s, #f)),
                quote!(#p::send_reverse(#ctor, #tape, #s)),
            )
        }
        (Some((di, x)), None) => {
            let d = name(*di);
            let f = quote!(|__d: &mut #x| #call);
            (
                quote!(#p::recv_forward(#ctor, #d, #f)),
                quote!(#p::recv_augmented_primal(#ctor, #d, #f)),
                quote!(#p::recv_reverse(#ctor, #tape, #d)),
            )
        }
        (None, None) => return TokenStream::new(), // no kind has neither (checked)
    };

    // The signatures.
    let params: Vec<TokenStream> = (0..rule.params.len())
        .map(|i| {
            let n = &rule.params[i].name;
            if dst.as_ref().is_some_and(|d| d.0 == i) {
                quote!(#n: __Dst)
            } else if src.as_ref().is_some_and(|s| s.0 == i) {
                quote!(#n: __Src)
            } else {
                let ty = &rule.params[i].ty;
                quote!(#n: #ty)
            }
        })
        .collect();
    let mut generics = rule.func.sig.generics.clone();
    for l in fresh.iter().rev() {
        let param = syn::LifetimeParam::new(l.clone());
        generics
            .params
            .insert(0, syn::GenericParam::Lifetime(param));
    }
    if dst.is_some() {
        generics.params.push(syn::parse_quote!(__Dst));
    }
    if src.is_some() {
        generics.params.push(syn::parse_quote!(__Src));
    }
    let (impl_generics, _, _) = generics.split_for_impl();
    let user_where = generics.where_clause.as_ref().map(|w| {
        let preds = w.predicates.iter();
        quote!(#(#preds,)*)
    });
    let where_clause = quote!(where #user_where #bounds);
    let names = Names::new(rule);
    let docs = CollectiveDocs::new(&rule.func.sig.ident.to_string(), c.kind, c.unsafety);
    let (fwd_doc, aug_doc, rev_doc) = (
        docs.forward(),
        docs.augmented(&names.reverse),
        docs.reverse(&names.augmented),
    );
    let Names {
        forward,
        augmented,
        reverse,
    } = &names;
    let vis = &rule.func.vis;
    let unsafety = c.unsafety.then(|| quote!(unsafe));
    let allow = allowances();
    let result = quote!(::core::result::Result);
    quote! {
        #[doc = #fwd_doc]
        #allow
        #vis #unsafety fn #forward #impl_generics (#(#params),*) -> #result<(), #p::Error> #where_clause {
            #fwd
        }

        #[doc = #aug_doc]
        #allow
        #vis #unsafety fn #augmented #impl_generics (#(#params),*) -> #result<#p::CollectiveTape, #p::Error> #where_clause {
            #aug
        }

        #[doc = #rev_doc]
        #allow
        #vis #unsafety fn #reverse #impl_generics (#tape: #p::CollectiveTape, #(#params),*) -> #result<(), #p::Error> #where_clause {
            #rev
        }
    }
}

/// The reverse rule's tape parameter (renamed if the primal has a `tape`).
fn tape_name(rule: &Rule) -> Ident {
    if rule.params.iter().any(|p| p.name == super::TAPE) {
        format_ident!("__{}", super::TAPE)
    } else {
        format_ident!("{}", super::TAPE)
    }
}

/// Parameter `i` as a reference for the runtime, and `bound` at the type it refers to: a
/// reference parameter is passed as it is (bound on its referent), any other by `&`.
fn by_ref(
    rule: &Rule,
    i: usize,
    bound: &TokenStream,
    fresh: &mut Vec<Lifetime>,
) -> (TokenStream, TokenStream) {
    let n = &rule.params[i].name;
    let (mut ty, arg) = match &rule.params[i].ty {
        Type::Reference(r) => ((*r.elem).clone(), quote!(#n)),
        other => (other.clone(), quote!(&#n)),
    };
    name_lifetimes(&mut ty, fresh);
    (arg, bound_at(&ty, bound))
}

/// `E: NcclElement` at the element `E` of a buffer type, unless the macro knows `E` by name.
fn element_bound(p: &TokenStream, buffer: &Type) -> TokenStream {
    match element_of(buffer) {
        Some(e) if elem_name(e).is_some_and(|n| NCCL_ELEMENTS.contains(&n.as_str())) => {
            TokenStream::new()
        }
        Some(e) => bound_at(e, &quote!(#p::NcclElement)),
        None => TokenStream::new(),
    }
}
