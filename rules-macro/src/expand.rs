//! Stage 3: code generation. Emits the user's function unchanged (role attributes stripped) and,
//! next to it, the forward rule and the augmented-primal + reverse pair, each a thin call into the
//! runtime's rule bodies (`rules_runtime::rules`). Every runtime item is named through
//! `<crate>::__private`, every std item through `::core`, so user modules cannot capture them.

use crate::check::{Checked, Shape, check};
use crate::errors::Ctxt;
use crate::parse::{MemKind, Rule, parse_args, parse_fn};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

/// The whole macro: parse → check → expand. On error, the user's function is still emitted, so
/// the rest of the crate keeps compiling and editors keep working.
pub fn derivative_rule(attr: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let args = parse_args(&cx, attr);
    let Some(rule) = parse_fn(&cx, args, item.clone()) else {
        let errors = cx.into_compile_errors();
        return quote!(#item #errors);
    };
    let checked = check(&cx, &rule);
    let func = &rule.func;
    match checked {
        Some(c) if !cx.has_errors() => {
            let rules = expand_rules(&rule, &c);
            quote!(#func #rules)
        }
        _ => {
            let errors = cx.into_compile_errors();
            quote!(#func #errors)
        }
    }
}

struct Names {
    forward: Ident,
    augmented: Ident,
    reverse: Ident,
    tape: Ident,
}

fn expand_rules(rule: &Rule, c: &Checked) -> TokenStream {
    let krate = rule
        .args
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::rules_runtime));
    let p = quote!(#krate::__private);
    let name = &rule.func.sig.ident;
    let names = Names {
        forward: rule
            .args
            .forward
            .clone()
            .unwrap_or_else(|| format_ident!("{}_forward", name)),
        augmented: rule
            .args
            .augmented_primal
            .clone()
            .unwrap_or_else(|| format_ident!("{}_augmented_primal", name)),
        reverse: rule
            .args
            .reverse
            .clone()
            .unwrap_or_else(|| format_ident!("{}_reverse", name)),
        tape: if rule.params.iter().any(|p| p.name == "tape") {
            format_ident!("__tape")
        } else {
            format_ident!("tape")
        },
    };

    // Parameters of the generated rules: buffers become activities, the rest pass through.
    let params: Vec<TokenStream> = rule
        .params
        .iter()
        .enumerate()
        .map(|(i, prm)| {
            let n = &prm.name;
            if i == c.dst {
                quote!(#n: __Dst)
            } else if i == c.src {
                quote!(#n: __Src)
            } else {
                let ty = &prm.ty;
                quote!(#n: #ty)
            }
        })
        .collect();
    // Arguments of the primal call inside the closure.
    let call_args: Vec<TokenStream> = rule
        .params
        .iter()
        .enumerate()
        .map(|(i, prm)| {
            let n = &prm.name;
            if i == c.dst {
                quote!(__d)
            } else if i == c.src {
                quote!(__s)
            } else if matches!(&prm.ty, Type::Reference(r) if r.mutability.is_some()) {
                quote!(&mut *#n)
            } else {
                quote!(#n)
            }
        })
        .collect();
    // Pass-through arguments are used once per lane: by-value ones must be `Copy`.
    let pass_through_checks: Vec<TokenStream> = rule
        .params
        .iter()
        .enumerate()
        .filter(|(i, prm)| *i != c.dst && *i != c.src && !matches!(prm.ty, Type::Reference(_)))
        .map(|(_, prm)| {
            let ty = &prm.ty;
            quote_spanned!(ty.span()=> let _ = #p::assert_pass_through::<#ty>;)
        })
        .collect();
    let elem_checks: Vec<TokenStream> = c
        .unknown_elems
        .iter()
        .map(|t| quote_spanned!(t.span()=> #t: #p::Differentiable,))
        .collect();

    let primal_unsafe = matches!(rule.func.sig.safety, syn::Safety::Unsafe(_));
    let call = if primal_unsafe {
        quote!(unsafe { #name(#(#call_args),*) })
    } else {
        quote!(#name(#(#call_args),*))
    };
    let on = match c.stream {
        Some(i) => {
            let s = &rule.params[i].name;
            quote!(#p::On::stream(&#s))
        }
        None => quote!(#p::On::Host),
    };
    let dst_name = &rule.params[c.dst].name;
    let src_name = &rule.params[c.src].name;
    let tape = &names.tape;

    let (bounds, closure, fwd_body, aug_body, rev_body) = match &c.shape {
        Shape::Slice { dst, src } => {
            let bounds = quote! {
                __Dst: #p::DstArg<#dst>,
                __Src: #p::SrcArg<#src>,
                <__Dst as #p::Activity>::Width: #p::SameWidth<<__Src as #p::Activity>::Width>,
            };
            let dst_bound = quote_spanned!(dst.span()=> #dst: #p::ShadowMemory,);
            let src_bound = quote_spanned!(src.span()=>
                #src: #p::ShadowMemory, #dst: #p::SameElem<#src>,);
            let closure = quote!(|__d: &mut #dst, __s: &#src| #call);
            (
                quote!(#bounds #dst_bound #src_bound),
                closure.clone(),
                quote!(#p::copy_forward(#on, #dst_name, #src_name, #closure)),
                quote!(#p::copy_augmented_primal(#dst_name, #src_name, #closure)),
                quote!(#p::copy_reverse(#on, #tape, #dst_name, #src_name)),
            )
        }
        Shape::Pointer {
            elem,
            dst_kind,
            src_kind,
            len,
            dst_offset,
            src_offset,
        } => {
            let bounds = quote! {
                __Dst: #p::DstPtr<#elem>,
                __Src: #p::SrcPtr<#elem>,
                <__Dst as #p::Activity>::Width: #p::SameWidth<<__Src as #p::Activity>::Width>,
            };
            let elem_bound = quote_spanned!(elem.span()=> #elem: #p::Differentiable,);
            let kind = |k: &MemKind| match k {
                MemKind::Host => quote!(#p::MemoryKind::Host),
                MemKind::Pinned => quote!(#p::MemoryKind::Pinned),
                MemKind::Device => quote!(#p::MemoryKind::Device),
                MemKind::Unified => quote!(#p::MemoryKind::Unified),
            };
            let (dk, sk) = (kind(dst_kind), kind(src_kind));
            let extent = |i: &Option<usize>| match i {
                Some(i) => {
                    let n = &rule.params[*i].name;
                    quote!(#n)
                }
                None => quote!(0usize),
            };
            let (doff, soff) = (extent(dst_offset), extent(src_offset));
            let n = &rule.params[*len].name;
            let shape = quote! {
                #p::PtrCopy { dst_kind: #dk, src_kind: #sk, dst_offset: #doff, src_offset: #soff, n: #n }
            };
            let closure = quote!(|__d: *mut #elem, __s: *const #elem| #call);
            (
                quote!(#bounds #elem_bound),
                closure.clone(),
                quote!(unsafe { #p::ptr_copy_forward(#on, #shape, #dst_name, #src_name, #closure) }),
                quote!(unsafe { #p::ptr_copy_augmented_primal(#shape, #dst_name, #src_name, #closure) }),
                quote!(unsafe { #p::ptr_copy_reverse(#on, #shape, #tape, #dst_name, #src_name) }),
            )
        }
    };
    let _ = closure;

    let vis = &rule.func.vis;
    let unsafety = if c.unsafety { quote!(unsafe) } else { quote!() };
    let mut generics = rule.func.sig.generics.clone();
    generics.params.push(syn::parse_quote!(__Dst));
    generics.params.push(syn::parse_quote!(__Src));
    let user_where = generics.where_clause.take().map(|w| {
        let preds = w.predicates;
        quote!(#preds,)
    });
    let (impl_generics, _, _) = generics.split_for_impl();
    let where_clause = quote!(where #user_where #bounds #(#elem_checks)*);
    let docs = Docs::new(&name.to_string(), c);
    let (fwd_doc, aug_doc, rev_doc) = (
        docs.forward(),
        docs.augmented(&names.reverse),
        docs.reverse(&names.augmented),
    );
    let Names {
        forward,
        augmented,
        reverse,
        ..
    } = &names;
    let allow = quote! {
        #[allow(unused_variables, unused_qualifications, unused_unsafe, non_snake_case)]
        #[allow(clippy::all, clippy::pedantic, clippy::nursery)]
    };
    let result = quote!(::core::result::Result);

    quote! {
        #[doc = #fwd_doc]
        #allow
        #vis #unsafety fn #forward #impl_generics (#(#params),*) -> #result<(), #p::Error> #where_clause {
            #(#pass_through_checks)*
            #fwd_body
        }

        #[doc = #aug_doc]
        #allow
        #vis #unsafety fn #augmented #impl_generics (#(#params),*) -> #result<#p::CopyTape, #p::Error> #where_clause {
            #(#pass_through_checks)*
            #aug_body
        }

        #[doc = #rev_doc]
        #allow
        #vis #unsafety fn #reverse #impl_generics (#tape: #p::CopyTape, #(#params),*) -> #result<(), #p::Error> #where_clause {
            #rev_body
        }
    }
}

/// The documentation of the generated rules.
struct Docs {
    primal: String,
    pointer: bool,
    unsafety: bool,
}

impl Docs {
    fn new(primal: &str, c: &Checked) -> Self {
        Docs {
            primal: primal.to_string(),
            pointer: matches!(c.shape, Shape::Pointer { .. }),
            unsafety: c.unsafety,
        }
    }

    fn how_to_call(&self) -> String {
        let (d, s) = if self.pointer {
            (
                "`Const(p)`, `Duplicated::new(p, dp)`, `Duplicated::batch(p, [dp1, ..])` or `DuplicatedOnly::new(p, dp)`",
                "the same, with a `*const` primal and `*mut` shadows",
            )
        } else {
            (
                "`Const(&mut x)`, `Duplicated::new(&mut x, &mut dx)`, `Duplicated::batch(&mut x, [&mut dx1, ..])` or `DuplicatedOnly::new(&mut x, &mut dx)`",
                "`Const(&x)`, `Duplicated::new(&x, &mut dx)` or `Duplicated::batch(&x, [..])`",
            )
        };
        format!(
            "\n\n# Arguments\nAs for [`{p}`], except that the destination is an activity: {d}; and the source: {s}. \
             `dst` and `src` must have the same batch width (or one of them be `Const`). \
             Other arguments are passed to [`{p}`] unchanged.",
            p = self.primal
        )
    }

    fn tail(&self) -> String {
        let mut t = format!(
            "\n\n# Errors\n`LengthMismatch` when a shadow's length differs from its primal's{}, `PartialOverlap` when \
             source and destination partially overlap, `Primal` when [`{}`] fails, `Driver`/`NoDriver` from \
             CUDA work. Every check runs before anything is written.",
            if self.pointer {
                ""
            } else {
                " or `dst` and `src` differ in length"
            },
            self.primal
        );
        if self.unsafety {
            t.push_str(&format!(
                "\n\n# Safety\nThe contract of [`{}`], for the primal pointers and for every shadow pointer: \
                 each must be valid for its offset plus the copied length, in the memory kind the attribute declares.",
                self.primal
            ));
        }
        t
    }

    fn forward(&self) -> String {
        format!(
            "Forward-mode (tangent) rule of [`{p}`], generated by `#[derivative_rule(copy)]`.\n\n\
             Runs the copy (skipped when `dst` is `DuplicatedOnly`), then for each lane `k`: \
             `d_dst[k] ← d_src[k]` through [`{p}`] itself (same direction, same stream), or \
             `d_dst[k] ← 0` when `src` is `Const`. A `Const` destination's shadows are untouched.{}{}",
            self.how_to_call(),
            self.tail(),
            p = self.primal
        )
    }

    fn augmented(&self, reverse: &Ident) -> String {
        format!(
            "Augmented primal of [`{p}`], generated by `#[derivative_rule(copy)]`: runs the copy \
             (skipped when `dst` is `DuplicatedOnly`) and returns the tape for [`{reverse}`].{}{}",
            self.how_to_call(),
            self.tail(),
            p = self.primal
        )
    }

    fn reverse(&self, augmented: &Ident) -> String {
        format!(
            "Reverse rule of [`{p}`], generated by `#[derivative_rule(copy)]`. Takes the tape from \
             [`{augmented}`] and the same arguments. For each lane `k`, in order on the copy's stream: \
             if `src` is active, `d_src[k] += d_dst[k]`; then `d_dst[k] ← 0` (one fused pass). \
             An exact self-copy is the identity.{}{}",
            self.how_to_call(),
            self.tail(),
            p = self.primal
        )
    }
}
