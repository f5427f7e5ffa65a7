//! Stage 3: code generation. Emits the user's function unchanged (role attributes stripped) and,
//! next to it, the forward rule and the augmented-primal + reverse pair, each a thin call into the
//! runtime's rule bodies (`rules_runtime::rules`). Every runtime item is named through
//! `<crate>::__private`, every std item through `::core`, so user modules cannot capture them.
//!
//! What the macro cannot see becomes a `where` bound written at the user's own tokens (a buffer
//! type that may not implement `ShadowMemory`, an element that may not be `Differentiable`, a
//! stream, a return type), so rustc reports it there, worded by the trait's `on_unimplemented`.
//! The same bounds let the bodies type-check, so a failed bound is one error, not a cascade.

mod collective;

use crate::args::{MemKind, parse_args};
use crate::check::{Checked, Shape, check, check_collective};
use crate::docs::Docs;
use crate::errors::Ctxt;
use crate::parse::{Item, Rule, parse_fn};
use crate::types::{host_container_elem, known_elem, name_lifetimes};
use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::{Ident, Lifetime, ReturnType, Type};

/// The whole macro: parse → check → expand. On error, the user's function is still emitted (so
/// the rest of the crate keeps compiling and editors keep working), with harmless stubs of the
/// three generated functions, so that their callers see the rule's error and nothing else.
pub fn derivative_rule(attr: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let args = parse_args(&cx, attr);
    let rule = match parse_fn(&cx, args, item) {
        Item::Rule(rule) => *rule,
        Item::Other(tokens) => {
            let errors = cx.into_compile_errors();
            return quote!(#tokens #errors);
        }
    };
    let func = &rule.func;
    if let Some(kind) = rule.collective() {
        return match check_collective(&cx, &rule, kind) {
            Some(c) if !cx.has_errors() => {
                let rules = collective::expand(&rule, &c);
                quote!(#func #rules)
            }
            _ => {
                let stubs = stubs(&rule);
                let errors = cx.into_compile_errors();
                quote!(#func #stubs #errors)
            }
        };
    }
    let checked = check(&cx, &rule);
    match checked {
        Some(c) if !cx.has_errors() => {
            let rules = expand_rules(&rule, &c);
            quote!(#func #rules)
        }
        _ => {
            let stubs = stubs(&rule);
            let errors = cx.into_compile_errors();
            quote!(#func #stubs #errors)
        }
    }
}

struct Names {
    forward: Ident,
    augmented: Ident,
    reverse: Ident,
}

impl Names {
    fn new(rule: &Rule) -> Self {
        let name = &rule.func.sig.ident;
        let or = |given: &Option<Ident>, suffix: &str| {
            given
                .clone()
                .unwrap_or_else(|| format_ident!("{}_{}", name, suffix))
        };
        Names {
            forward: or(&rule.args.forward, "forward"),
            augmented: or(&rule.args.augmented_primal, "augmented_primal"),
            reverse: or(&rule.args.reverse, "reverse"),
        }
    }
}

/// `<crate>::__private`.
fn private_path(rule: &Rule) -> TokenStream {
    let krate = rule
        .args
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::rules_runtime));
    quote!(#krate::__private)
}

/// Lints the generated items must not trigger in the user's crate, whatever it denies.
fn allowances() -> TokenStream {
    quote! {
        #[allow(
            unused_variables,
            unused_qualifications,
            unused_unsafe,
            unused_lifetimes,
            single_use_lifetimes,
            non_snake_case,
            clippy::all,
            clippy::pedantic,
            clippy::nursery,
        )]
    }
}

/// Stand-ins for the three generated functions when the rule has an error: any arguments, the
/// right result types, never run (the crate does not compile). Not emitted for methods, whose
/// generated functions could not be placed anyway.
fn stubs(rule: &Rule) -> TokenStream {
    if rule.params.iter().any(|p| p.receiver) {
        return TokenStream::new();
    }
    let p = private_path(rule);
    let names = Names::new(rule);
    let vis = &rule.func.vis;
    let allow = allowances();
    let tys: Vec<Ident> = (0..rule.params.len())
        .map(|i| format_ident!("__A{}", i))
        .collect();
    let tape_ty = if rule.collective().is_some() {
        quote!(#p::CollectiveTape)
    } else {
        quote!(#p::CopyTape)
    };
    let stub = |name: &Ident, ok: TokenStream, tape: bool| {
        let tape = tape.then(|| quote!(_: #tape_ty,));
        quote! {
            #[doc(hidden)]
            #allow
            #[allow(missing_docs, dead_code, clippy::unimplemented)]
            #vis fn #name<#(#tys),*>(#tape #(_: #tys),*) -> ::core::result::Result<#ok, #p::Error> {
                ::core::unimplemented!("the rule has a compile error")
            }
        }
    };
    let Names {
        forward,
        augmented,
        reverse,
    } = &names;
    let f = stub(forward, quote!(()), false);
    let a = stub(augmented, tape_ty.clone(), false);
    let r = stub(reverse, quote!(()), true);
    quote!(#f #a #r)
}

/// Every token of `tokens`, at `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => {
                let mut out = Group::new(g.delimiter(), respan(g.stream(), span));
                out.set_span(span);
                TokenTree::Group(out)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// The span of the first token of `tokens`.
fn first_span<T: ToTokens>(tokens: &T) -> Span {
    tokens
        .to_token_stream()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

/// `ty: bound,` written at `ty`: rustc reports a failure of the bound at the type the user wrote.
fn bound_at(ty: &Type, bound: &TokenStream) -> TokenStream {
    let last = ty
        .to_token_stream()
        .into_iter()
        .last()
        .map_or_else(Span::call_site, |t| t.span());
    let bound = respan(quote!(: #bound,), last);
    quote!(#ty #bound)
}

/// The bounds that make a slice rule's buffers usable: `ShadowMemory` for opaque buffer types,
/// `Differentiable` for elements the macro could not name, and equal elements (unless the macro
/// could compare them itself).
fn buffer_bounds(p: &TokenStream, dst: &Type, src: &Type) -> TokenStream {
    let mut out = TokenStream::new();
    for x in [dst, src] {
        match host_container_elem(x) {
            Some(e) if known_elem(e) => {}
            Some(e) => out.extend(bound_at(e, &quote!(#p::Differentiable))),
            None => out.extend(bound_at(x, &quote!(#p::ShadowMemory))),
        }
    }
    let same =
        |a: &Type, b: &Type| a.to_token_stream().to_string() == b.to_token_stream().to_string();
    let (de, se) = (host_container_elem(dst), host_container_elem(src));
    let compare = match (de, se) {
        (Some(d), Some(s)) => (!known_elem(d) || !known_elem(s)) && !same(d, s),
        _ => !same(dst, src),
    };
    if compare {
        // The destination's element, named without a projection onto the source's own type,
        // which the trait solver could not resolve.
        let target = de.map_or_else(|| quote!(<#dst as #p::ShadowRead>::Elem), |d| quote!(#d));
        out.extend(bound_at(src, &quote!(#p::ShadowMemory<Elem = #target>)));
    }
    out
}

/// The reverse rule's tape parameter, as its documentation names it.
const TAPE: &str = "tape";

/// What each generated function needs besides its signature.
struct Bodies {
    /// `where` predicates on `__Dst`, `__Src` and the buffer types.
    bounds: TokenStream,
    forward: TokenStream,
    augmented: TokenStream,
    reverse: TokenStream,
}

/// The code generation of one checked rule.
struct Generator<'a> {
    rule: &'a Rule,
    checked: &'a Checked,
    /// `<crate>::__private`.
    private: TokenStream,
    /// The reverse rule's tape parameter (renamed if the primal has a `tape`).
    tape: Ident,
    /// Lifetimes given to elided ones, to be declared on the generated functions.
    fresh: Vec<Lifetime>,
}

fn expand_rules(rule: &Rule, checked: &Checked) -> TokenStream {
    let tape = if rule.params.iter().any(|p| p.name == TAPE) {
        format_ident!("__{}", TAPE)
    } else {
        format_ident!("{}", TAPE)
    };
    Generator {
        rule,
        checked,
        private: private_path(rule),
        tape,
        fresh: Vec::new(),
    }
    .generate()
}

impl Generator<'_> {
    fn generate(mut self) -> TokenStream {
        let private = self.private.clone();
        let outcome = self.outcome_bound();
        let (on, stream_bound) = self.stream();
        let call = self.primal_call();
        let bodies = match &self.checked.shape {
            Shape::Slice { dst, src } => self.slice(dst, src, &on, &call),
            Shape::Pointer { elem, .. } => self.pointer(elem, &on, &call),
        };
        let params = self.params();
        let rule = self.rule;
        let name = &rule.func.sig.ident;
        let vis = &rule.func.vis;
        let unsafety = self.checked.unsafety.then(|| quote!(unsafe));
        let generics = self.generics();
        let (impl_generics, _, _) = generics.split_for_impl();
        let user_where = generics.where_clause.as_ref().map(|w| {
            let preds = w.predicates.iter();
            quote!(#(#preds,)*)
        });
        let Bodies {
            bounds,
            forward: fwd_body,
            augmented: aug_body,
            reverse: rev_body,
        } = bodies;
        let where_clause = quote!(where #user_where #bounds #outcome #stream_bound);
        let names = Names::new(rule);
        let docs = Docs::new(&name.to_string(), self.checked);
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
        let allow = allowances();
        let result = quote!(::core::result::Result);
        let tape = &self.tape;
        quote! {
            #[doc = #fwd_doc]
            #allow
            #vis #unsafety fn #forward #impl_generics (#(#params),*) -> #result<(), #private::Error> #where_clause {
                #fwd_body
            }

            #[doc = #aug_doc]
            #allow
            #vis #unsafety fn #augmented #impl_generics (#(#params),*) -> #result<#private::CopyTape, #private::Error> #where_clause {
                #aug_body
            }

            #[doc = #rev_doc]
            #allow
            #vis #unsafety fn #reverse #impl_generics (#tape: #private::CopyTape, #(#params),*) -> #result<(), #private::Error> #where_clause {
                #rev_body
            }
        }
    }

    /// The user's generics, the lifetimes named for elided ones, then `__Dst` and `__Src`.
    fn generics(&self) -> syn::Generics {
        let mut generics = self.rule.func.sig.generics.clone();
        for l in self.fresh.iter().rev() {
            let param = syn::LifetimeParam::new(l.clone());
            generics
                .params
                .insert(0, syn::GenericParam::Lifetime(param));
        }
        generics.params.push(syn::parse_quote!(__Dst));
        generics.params.push(syn::parse_quote!(__Src));
        generics
    }

    /// Parameters of the generated rules: buffers become activities, the rest pass through.
    fn params(&self) -> Vec<TokenStream> {
        let c = self.checked;
        let rule = self.rule;
        (0..rule.params.len())
            .map(|i| {
                let n = &rule.params[i].name;
                if i == c.dst {
                    quote!(#n: __Dst)
                } else if i == c.src {
                    quote!(#n: __Src)
                } else {
                    let ty = &rule.params[i].ty;
                    quote!(#n: #ty)
                }
            })
            .collect()
    }

    /// The call of the primal inside the closure the runtime runs; see [`primal_call`].
    fn primal_call(&self) -> TokenStream {
        primal_call(
            &self.private,
            self.rule,
            Some(self.checked.dst),
            Some(self.checked.src),
        )
    }

    /// `R: PrimalOutcome` at the return type the user wrote, if any.
    fn outcome_bound(&mut self) -> TokenStream {
        let ReturnType::Type(_, ty) = &self.rule.func.sig.output else {
            return TokenStream::new();
        };
        let mut ty = (**ty).clone();
        name_lifetimes(&mut ty, &mut self.fresh);
        let private = &self.private;
        bound_at(&ty, &quote!(#private::PrimalOutcome))
    }

    /// Where the shadow work is ordered (`On::stream(s)` or `On::Host`), and the `AsStream` bound
    /// at the stream parameter's type.
    fn stream(&mut self) -> (TokenStream, TokenStream) {
        let private = self.private.clone();
        let Some(i) = self.checked.stream else {
            return (quote!(#private::On::Host), TokenStream::new());
        };
        let s = &self.rule.params[i].name;
        let (mut ty, arg) = if let Type::Reference(r) = &self.rule.params[i].ty {
            ((*r.elem).clone(), quote!(#s))
        } else {
            (self.rule.params[i].ty.clone(), quote!(&#s))
        };
        name_lifetimes(&mut ty, &mut self.fresh);
        (
            quote!(#private::On::stream(#arg)),
            bound_at(&ty, &quote!(#private::AsStream)),
        )
    }

    /// A slice rule: `dst: &mut X ← src: &Y`.
    fn slice(&mut self, dst: &Type, src: &Type, on: &TokenStream, call: &TokenStream) -> Bodies {
        let (mut dst, mut src) = (dst.clone(), src.clone());
        name_lifetimes(&mut dst, &mut self.fresh);
        name_lifetimes(&mut src, &mut self.fresh);
        let (p, tape) = (&self.private, &self.tape);
        let (d, s) = self.buffer_names();
        let buffers = buffer_bounds(p, &dst, &src);
        let closure = quote!(|__d: &mut #dst, __s: &#src| #call);
        Bodies {
            bounds: quote! {
                __Dst: #p::DstArg<#dst>,
                __Src: #p::SrcArg<#src>,
                <__Dst as #p::Activity>::Width: #p::SameWidth<<__Src as #p::Activity>::Width>,
                #buffers
            },
            forward: quote!(#p::copy_forward(#on, #d, #s, #closure)),
            augmented: quote!(#p::copy_augmented_primal(#d, #s, #closure)),
            reverse: quote!(#p::copy_reverse(#on, #tape, #d, #s)),
        }
    }

    /// A pointer rule: `dst: *mut T ← src: *const T`, with a length and offsets.
    fn pointer(&mut self, elem: &Type, on: &TokenStream, call: &TokenStream) -> Bodies {
        let mut elem = elem.clone();
        name_lifetimes(&mut elem, &mut self.fresh);
        let (p, tape) = (&self.private, &self.tape);
        let (d, s) = self.buffer_names();
        let elem_bound = if known_elem(&elem) {
            TokenStream::new()
        } else {
            bound_at(&elem, &quote!(#p::Differentiable))
        };
        let shape = self.ptr_copy();
        let closure = quote!(|__d: *mut #elem, __s: *const #elem| #call);
        Bodies {
            bounds: quote! {
                __Dst: #p::DstPtr<#elem>,
                __Src: #p::SrcPtr<#elem>,
                <__Dst as #p::Activity>::Width: #p::SameWidth<<__Src as #p::Activity>::Width>,
                #elem_bound
            },
            forward: quote!(unsafe { #p::ptr_copy_forward(#on, #shape, #d, #s, #closure) }),
            augmented: quote!(unsafe { #p::ptr_copy_augmented_primal(#shape, #d, #s, #closure) }),
            reverse: quote!(unsafe { #p::ptr_copy_reverse(#on, #shape, #tape, #d, #s) }),
        }
    }

    /// The names of the `dst` and `src` parameters.
    fn buffer_names(&self) -> (&Ident, &Ident) {
        let params = &self.rule.params;
        (
            &params[self.checked.dst].name,
            &params[self.checked.src].name,
        )
    }

    /// The `PtrCopy` value of a pointer rule: memory kinds, offsets, length.
    fn ptr_copy(&self) -> TokenStream {
        let Shape::Pointer {
            dst_kind,
            src_kind,
            len,
            dst_offset,
            src_offset,
            ..
        } = &self.checked.shape
        else {
            return TokenStream::new();
        };
        let p = &self.private;
        let kind = |k: &MemKind| match k {
            MemKind::Host => quote!(#p::MemoryKind::Host),
            MemKind::Pinned => quote!(#p::MemoryKind::Pinned),
            MemKind::Device => quote!(#p::MemoryKind::Device),
            MemKind::Unified => quote!(#p::MemoryKind::Unified),
        };
        let extent = |i: Option<usize>| {
            i.map_or_else(
                || quote!(0usize),
                |i| {
                    let n = &self.rule.params[i].name;
                    quote!(#n)
                },
            )
        };
        let (dk, sk) = (kind(dst_kind), kind(src_kind));
        let (doff, soff) = (extent(*dst_offset), extent(*src_offset));
        let n = &self.rule.params[*len].name;
        quote! {
            #p::PtrCopy { dst_kind: #dk, src_kind: #sk, dst_offset: #doff, src_offset: #soff, n: #n }
        }
    }
}

/// The call of the primal inside the closure the runtime runs (once per lane for copies). The
/// buffers are the closure's `__d` and `__s`. Pass-through arguments: references are reborrowed,
/// by-value ones copied (they must be `Copy`, checked at their type; borrowing them keeps a
/// non-`Copy` one from a second error about moving out).
fn primal_call(
    private: &TokenStream,
    rule: &Rule,
    dst: Option<usize>,
    src: Option<usize>,
) -> TokenStream {
    let args = rule.params.iter().enumerate().map(|(i, prm)| {
        let n = &prm.name;
        if Some(i) == dst {
            return quote!(__d);
        }
        if Some(i) == src {
            return quote!(__s);
        }
        match &prm.ty {
            Type::Reference(r) if r.mutability.is_some() => quote!(&mut *#n),
            Type::Reference(_) | Type::Ptr(_) => quote!(#n),
            ty => {
                let span = first_span(ty);
                let copy = respan(quote!(#private::pass_through), span);
                let mut n = n.clone();
                n.set_span(span);
                quote_spanned!(span=> #copy(&#n))
            }
        }
    });
    let name = &rule.func.sig.ident;
    if matches!(rule.func.sig.safety, syn::Safety::Unsafe(_)) {
        quote!(unsafe { #name(#(#args),*) })
    } else {
        quote!(#name(#(#args),*))
    }
}
