//! The rule item: the struct of the rule's other arguments (a tuple struct, or one with named
//! fields and a constructor of the same name, or, for an `unsafe` primal on references, one whose
//! arguments are sealed behind its `unsafe` constructor), its generics, and the span at which
//! rustc reports the rule trait's own bounds.

use super::names::struct_allowances;
use super::tokens::first_span;
use super::{Access, Generator, bodies};
use crate::docs::Docs;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::{GenericParam, Ident, Lifetime};

impl Generator<'_> {
    /// The rule struct (and, for named fields, its constructor), and its type as the impl names
    /// it.
    pub(super) fn rule_struct(&self, name: &Ident, doc: &str) -> (TokenStream, TokenStream) {
        let rule = self.rule;
        let vis = &rule.func.vis;
        let allow = struct_allowances();
        let (decl, args) = self.struct_generics();
        let (decl, self_ty) = if decl.is_empty() {
            (TokenStream::new(), quote!(#name))
        } else {
            (quote!(<#(#decl),*>), quote!(#name <#(#args),*>))
        };
        if self.access == Access::Tuple {
            let fields = self.rest_tys.iter().map(|ty| quote!(#vis #ty));
            let item = quote! {
                #[doc = #doc]
                #allow
                #vis struct #name #decl (#(#fields),*);
            };
            return (item, self_ty);
        }
        let p = &self.p;
        let names: Vec<(&Ident, &Vec<syn::Attribute>)> = self
            .rest
            .iter()
            .map(|&i| (&rule.params[i].name, &rule.params[i].cfg))
            .collect();
        let fields = names
            .iter()
            .zip(&self.rest_tys)
            .map(|((n, cfg), ty)| quote!(#(#cfg)* #n: #ty));
        let fields: Vec<TokenStream> = fields.collect();
        // A const parameter is not a type: the marker holds it as `[(); N]`.
        let consts: Vec<String> = self
            .rule
            .func
            .sig
            .generics
            .const_params()
            .map(|c| c.ident.to_string())
            .collect();
        let unnamed = self.unnamed.iter().map(|i| {
            if consts.contains(&i.to_string()) {
                quote!([(); #i])
            } else {
                quote!(#i)
            }
        });
        // The fields' lifetimes too: a field may be configured out.
        let lifetimes = &self.fresh[..self.rest_fresh];
        let marker = quote!(
            __marker: #p::core::marker::PhantomData<fn() -> (#(&#lifetimes (),)* #(#unnamed,)*)>
        );
        let inits = names.iter().map(|(n, cfg)| quote!(#(#cfg)* #n));
        let ctor_doc = Docs::new(self.primal_path_text(), self.plan).constructor(name);
        if self.access == Access::Sealed {
            let args = args_struct_name(name);
            let args_ty = match self.struct_generics().1 {
                a if a.is_empty() => quote!(#args),
                a => quote!(#args <#(#a),*>),
            };
            // The arguments live in a struct of this rule's own, private and hidden, held in
            // `UnsafeArgs`: the user's module sees the rule struct's one field, but can neither
            // make its value nor reach the arguments without `unsafe` (see `Access::Sealed`).
            let item = quote! {
                #[doc = #doc]
                #allow
                #vis struct #name #decl { __args: #p::UnsafeArgs<#args_ty> }
                #[doc(hidden)]
                #allow
                struct #args #decl { #(#fields,)* #marker }
                #[doc = #ctor_doc]
                #allow
                #[inline]
                #vis unsafe fn #name #decl (#(#fields),*) -> #self_ty {
                    #name {
                        // SAFETY: this function's own contract is `UnsafeArgs::new`'s.
                        __args: unsafe {
                            #p::UnsafeArgs::new(#args { #(#inits,)* __marker: #p::core::marker::PhantomData })
                        },
                    }
                }
            };
            return (item, self_ty);
        }
        let item = quote! {
            #[doc = #doc]
            #allow
            #vis struct #name #decl { #(#fields,)* #marker }
            #[doc = #ctor_doc]
            #allow
            #[inline]
            #vis fn #name #decl (#(#fields),*) -> #self_ty {
                #name { #(#inits,)* __marker: #p::core::marker::PhantomData }
            }
        };
        (item, self_ty)
    }

    /// What a method of the rule's impl starts with to reach the arguments of a sealed rule
    /// ([`Access::Sealed`]): `__a`, a reference to them (`mutable`: for the primal's call, which
    /// reborrows `&mut` arguments); nothing for the other accesses.
    pub(super) fn bind_args(&self, mutable: bool) -> TokenStream {
        if self.access != Access::Sealed {
            return TokenStream::new();
        }
        let p = &self.p;
        // SAFETY (of the generated blocks): the arguments are only read, or their references
        // reborrowed for the primal's call; none is replaced.
        if mutable {
            quote!(let __a = unsafe { #p::UnsafeArgs::get_mut(&mut self.__args) };)
        } else {
            quote!(let __a = unsafe { #p::UnsafeArgs::get(&self.__args) };)
        }
    }

    /// Where rustc reports a failure of the rule trait's own bounds: at the buffer type they
    /// check (one the macro does not know, with a lifetime: `bodies` writes no bound for it).
    pub(super) fn trait_span(&self) -> Option<Span> {
        let types = [&self.src_ty, &self.dst_ty];
        let ty = types
            .into_iter()
            .flatten()
            .find(|t| bodies::checked_by_trait(t))?;
        Some(first_span(ty))
    }

    /// Whether the primal is `unsafe` on references: its rule object's constructor is `unsafe`
    /// (the trait's methods are safe; pointer rules' methods are `unsafe` themselves).
    pub(super) fn slice_unsafe(&self) -> bool {
        self.rule.is_unsafe() && self.plan.extent().is_none()
    }

    /// The user's type and const parameters that no field, buffer or value type names: the
    /// struct carries them in a marker, so that the impl can name them.
    pub(super) fn unnamed_generics(&self) -> Vec<Ident> {
        if self.rule.func.sig.generics.params.is_empty() {
            return Vec::new();
        }
        let mut named = TokenStream::new();
        for ty in self.rest_tys.iter().chain(&self.dst_ty).chain(&self.src_ty) {
            ty.to_tokens(&mut named);
        }
        if let Some(v) = &self.plan.value {
            v.ty.to_tokens(&mut named);
        }
        let used = idents(named);
        self.type_and_const_params()
            .filter(|i| !used.contains(&i.to_string()))
            .cloned()
            .collect()
    }

    /// The names of the user's type and const parameters, in declaration order (lifetimes left
    /// out: the primal's call and the marker name only these).
    pub(super) fn type_and_const_params(&self) -> impl Iterator<Item = &Ident> {
        self.rule
            .func
            .sig
            .generics
            .params
            .iter()
            .filter_map(|g| match g {
                GenericParam::Type(t) => Some(&t.ident),
                GenericParam::Const(c) => Some(&c.ident),
                GenericParam::Lifetime(_) => None,
            })
    }

    /// The struct's parameters (declared, and as its type names them): the lifetimes and the
    /// user's parameters its fields name, and those of [`Self::unnamed_generics`].
    pub(super) fn struct_generics(&self) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let mut tokens = TokenStream::new();
        for ty in &self.rest_tys {
            ty.to_tokens(&mut tokens);
        }
        let used = idents(tokens);
        let unnamed: Vec<String> = self
            .unnamed_generics()
            .iter()
            .map(Ident::to_string)
            .collect();
        let mut decl = Vec::new();
        let mut args = Vec::new();
        for l in &self.fresh {
            if used.contains(&format!("'{}", l.ident)) {
                decl.push(quote!(#l));
                args.push(quote!(#l));
            }
        }
        // The user's parameters the struct leaves out: a kept parameter's bound that names one
        // (`L: PartialEq<T>`, `T` only in a buffer's type) cannot be written on the struct, and
        // is not needed there (the impl repeats every bound).
        let generics = &self.rule.func.sig.generics;
        let left_out: Vec<String> = generics
            .params
            .iter()
            .map(|g| match g {
                GenericParam::Lifetime(l) => format!("'{}", l.lifetime.ident),
                GenericParam::Type(t) => t.ident.to_string(),
                GenericParam::Const(c) => c.ident.to_string(),
            })
            .filter(|n| !used.contains(n) && !unnamed.contains(n))
            .collect();
        for g in &generics.params {
            let (name, d) = match g {
                GenericParam::Lifetime(l) => {
                    let lt = &l.lifetime;
                    (format!("'{}", lt.ident), quote!(#lt))
                }
                GenericParam::Type(t) => {
                    let i = &t.ident;
                    let b: Vec<_> = t
                        .bounds
                        .iter()
                        .filter(|b| {
                            let named = idents(b.to_token_stream());
                            !left_out.iter().any(|n| named.contains(n))
                        })
                        .collect();
                    let colon = (!b.is_empty()).then(|| quote!(:));
                    (i.to_string(), quote!(#i #colon #(#b)+*))
                }
                GenericParam::Const(c) => {
                    let (i, ty) = (&c.ident, &c.ty);
                    (i.to_string(), quote!(const #i: #ty))
                }
            };
            if used.contains(&name) || unnamed.contains(&name) {
                let arg = match g {
                    GenericParam::Lifetime(l) => l.lifetime.to_token_stream(),
                    GenericParam::Type(t) => t.ident.to_token_stream(),
                    GenericParam::Const(c) => c.ident.to_token_stream(),
                };
                decl.push(d);
                args.push(arg);
            }
        }
        (decl, args)
    }

    /// The impl's (or the associated function's) parameters: the lifetimes named for elided ones,
    /// then the user's.
    pub(super) fn impl_generics(&self) -> TokenStream {
        let mut generics = self.rule.func.sig.generics.clone();
        generics.where_clause = None;
        for l in self.fresh.iter().rev() {
            let param = syn::LifetimeParam::new(l.clone());
            generics.params.insert(0, GenericParam::Lifetime(param));
        }
        let (impl_generics, _, _) = generics.split_for_impl();
        impl_generics.to_token_stream()
    }

    /// Every lifetime the generated item declares (for `Captures` bounds).
    pub(super) fn lifetimes(&self) -> Vec<Lifetime> {
        let user = self
            .rule
            .func
            .sig
            .generics
            .lifetimes()
            .map(|l| l.lifetime.clone());
        self.fresh.iter().cloned().chain(user).collect()
    }
}

/// The name of the struct holding a sealed rule's arguments ([`Access::Sealed`]): `__<rule>_args`.
fn args_struct_name(rule: &Ident) -> Ident {
    Ident::new(&format!("__{rule}_args"), rule.span())
}

/// Every identifier and lifetime (`'a`) in `tokens`.
fn idents(tokens: TokenStream) -> Vec<String> {
    fn walk(tokens: TokenStream, out: &mut Vec<String>) {
        let mut quote = false;
        for tt in tokens {
            match tt {
                TokenTree::Punct(p) => quote = p.as_char() == '\'',
                TokenTree::Ident(i) => {
                    out.push(if quote {
                        format!("'{i}")
                    } else {
                        i.to_string()
                    });
                    quote = false;
                }
                TokenTree::Group(g) => {
                    quote = false;
                    walk(g.stream(), out);
                }
                TokenTree::Literal(_) => quote = false,
            }
        }
    }
    let mut out = Vec::new();
    walk(tokens, &mut out);
    out
}
