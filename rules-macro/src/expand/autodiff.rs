//! The `autodiff` option: bridges that let Rust's `std::autodiff` (Enzyme inside rustc) call a
//! pointer rule's rules (`copy`, `copy2d`, `copy3d`, `memset`, `fill`). Generated beside the rule item, all inside the runtime's
//! `__private::if_autodiff!`, which emits them only with the runtime's `autodiff` feature (a
//! stable build never sees them; a `#[cfg]` here would trip `unexpected_cfgs` in every user
//! crate), one set per element type:
//!
//! - `rules_ad_<name>_<elem>`: the `#[no_mangle] #[inline(never)] extern "C"` primal Enzyme
//!   cannot see into (it returns nothing and uses every argument, as Enzyme needs);
//! - `..._aug` / `..._rev`: its augmented primal and reverse, Enzyme's calling convention (each
//!   argument followed by its shadow slot; the reverse takes the tape last), which call the rule
//!   object's `augmented_primal` / `reverse` through the runtime (`__private::ad`);
//! - `__enzyme_register_gradient_rules_ad_<name>_<elem>`: the static Enzyme's `preserve-nvvm`
//!   pass reads, `[primal, aug, rev]`;
//! - `<name>_ad` (`<name>_ad_<elem>` for a generic rule): the safe function users call inside the
//!   differentiated function, which lowers to the primal. Pageable host sides are slices; the
//!   others are `&AdBuf<T>` handles of an `AdPair` made outside.
//!
//! The rule object is handed to the runtime in the wrapper its kind needs (`Linear`, `Region`,
//! `Memset`, `Fill`), which says from the rule's plan how far each side reaches. A fill's value
//! is a float: no shadow slot in reverse mode (Enzyme returns its derivative from the reverse,
//! whose return type it is), its tangent's in forward mode. Slice rules, CUDA arrays and
//! collectives have no bridges: the misuse is reported here, at the `autodiff` word.

use crate::ctxt::Ctxt;
use crate::model::{AUTODIFF, DEFAULT_CRATE, Kind, MemKind};
use crate::parse::Rule;
use crate::plan::{Order, Plan};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::{GenericParam, Ident, Type};

/// Integer types a bridge passes by value (Enzyme's shadow slot holds the same value).
const BY_VALUE: &[&str] = &[
    "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64",
];

/// A checked `autodiff` option: what the bridges are generated from.
pub struct Bridges<'a> {
    rule: &'a Rule,
    plan: &'a Plan,
    /// The element types, and whether the rule is generic (names get the element's suffix).
    elems: Vec<Type>,
    generic: bool,
}

/// Checks the option against the rule; `None` (errors recorded) when it cannot be bridged, or
/// when there is no option.
pub fn check<'a>(cx: &Ctxt, rule: &'a Rule, plan: &'a Plan) -> Option<Bridges<'a>> {
    let arg = rule.args.autodiff.as_ref()?;
    let at = &arg.tokens;
    let errors = cx.has_errors();
    let extent = plan.extent();
    let refused = match plan.kind {
        _ if plan.region.has_array() => Some(
            "a copy to or from a CUDA array has none: an array is an opaque driver handle, not memory Enzyme can pass a pointer and a shadow of".to_string(),
        ),
        Kind::Copy | Kind::Copy2d | Kind::Copy3d | Kind::Memset => None,
        Kind::Fill if plan.value.is_none() => Some(
            "a `fill` from a value in a buffer has none: Enzyme would pass the value's buffer, which no bridge takes; take the value by value (`#[value] v: f32`)".to_string(),
        ),
        Kind::Fill => None,
        k => Some(format!(
            "{} has none: it is ordered by a communicator, not a stream a handle carries",
            k.noun()
        )),
    };
    if let Some(why) = refused {
        cx.error_spanned_by(
            at,
            format!("`{AUTODIFF}` bridges pointer `copy`, `copy2d`, `copy3d`, `memset` and `fill` rules; {why}: remove `{AUTODIFF}`"),
        );
        return None;
    }
    let Some(extent) = extent else {
        cx.error_spanned_by(
            at,
            format!("`{AUTODIFF}` needs a pointer rule (`#[dst] dst: *mut T`, `#[src] src: *const T`, with `dst = ..` and `src = ..` in the attribute): Enzyme passes raw pointers and their shadows, not references"),
        );
        return None;
    };
    if rule.args.in_impl {
        cx.error_spanned_by(at, format!("`{AUTODIFF}` is not available with `in_impl`: the bridges are free functions; annotate a free function"));
    }
    if plan.kind == Kind::Copy && !plan.is_region() && extent.len.is_none() {
        cx.error_spanned_by(
            at,
            format!("`{AUTODIFF}` needs the copy's length as a `#[len]` parameter"),
        );
    }
    let elem = plan.dst.as_ref().map(|b| b.ty.clone());
    let generics: Vec<&Ident> = rule
        .func
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            GenericParam::Type(t) => Some(&t.ident),
            _ => None,
        })
        .collect();
    if rule.func.sig.generics.const_params().next().is_some() {
        cx.error_spanned_by(&rule.func.sig.generics, format!("`{AUTODIFF}` cannot bridge a rule with const parameters: each bridge is one `extern \"C\"` function"));
    }
    let (elems, generic) = match (&arg.elems, generics.as_slice()) {
        (None, []) => (elem.into_iter().collect(), false),
        (Some(list), []) => {
            cx.error_spanned_by(
                at,
                format!(
                    "`{}` is not generic: its element type is `{}`; write `{AUTODIFF}` alone",
                    rule.func.sig.ident,
                    elem.as_ref()
                        .map(|t| t.to_token_stream().to_string())
                        .unwrap_or_default()
                ),
            );
            (list.clone(), false)
        }
        (None, [t]) => {
            cx.error_spanned_by(
                at,
                format!("`{}` is generic over `{t}`: `{AUTODIFF}` needs the element types to bridge (one `extern \"C\"` function each, as `no_mangle` cannot be generic), e.g. `{AUTODIFF}(f32, f64)`", rule.func.sig.ident),
            );
            (Vec::new(), true)
        }
        (Some(list), [t]) => {
            if !elem.as_ref().is_some_and(|e| is_ident(e, t)) {
                cx.error_spanned_by(&rule.func.sig.generics, format!("`{AUTODIFF}(...)` lists element types: the generic parameter `{t}` must be the pointers' element type"));
            }
            for e in list {
                if elem_suffix(e).is_none() {
                    cx.error_spanned_by(
                        e,
                        "an element type here is a plain type name (`f32`, `f64`, `half::f16`)",
                    );
                }
            }
            (list.clone(), true)
        }
        (_, many) => {
            cx.error_spanned_by(&rule.func.sig.generics, format!("`{AUTODIFF}` bridges a rule generic over its element type only; this one has {} type parameters", many.len()));
            (Vec::new(), true)
        }
    };
    let [dst, src] = plan.buffer_params();
    let stream = match plan.order {
        Order::Stream(s) => s,
        Order::Comm { .. } => None,
    };
    if let Some(si) = stream {
        let ty = &rule.params[si].ty;
        if !matches!(ty, Type::Reference(r) if r.mutability.is_none())
            || !crate::types::is_stream_type(ty)
        {
            cx.error_spanned_by(
                ty,
                format!("`{AUTODIFF}` takes the stream as `&CudaStream` or `&Arc<CudaStream>`"),
            );
        }
        let no_src = plan.src.is_none();
        if extent.dst_kind == MemKind::Host && (no_src || extent.src_kind == MemKind::Host) {
            cx.error_spanned_by(
                at,
                format!("`{AUTODIFF}` gives a rule its stream from its handles (`AdPair::new(.., stream)`), and this one has none: {}; drop the stream, or declare {} `pinned`, `device` or `unified`",
                    if no_src { "its buffer is pageable host memory, passed as a slice" } else { "both sides are pageable host memory, passed as slices" },
                    if no_src { "it" } else { "a side" }),
            );
        }
    }
    let value = plan.value.as_ref().map(|b| b.param);
    for (i, p) in rule.params.iter().enumerate() {
        if Some(i) == dst || Some(i) == src || Some(i) == stream || Some(i) == value {
            continue;
        }
        if !p.cfg.is_empty() {
            cx.error_spanned_by(&p.tokens, format!("`{AUTODIFF}` cannot bridge a configured-out parameter: the `extern \"C\"` signature is fixed"));
        } else if c_type(&p.ty).is_none() {
            cx.error_spanned_by(
                &p.ty,
                format!("`{AUTODIFF}` passes a rule's other arguments to Enzyme's C calling convention as references (`&X`, passed as `*const X`) or integers (`usize`, ...); `{}` is neither", crate::types::show(&p.ty)),
            );
        }
    }
    if cx.has_errors() && !errors {
        return None;
    }
    Some(Bridges {
        rule,
        plan,
        elems,
        generic,
    })
}

/// Whether `ty` is the path `t`.
fn is_ident(ty: &Type, t: &Ident) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident(t))
}

/// The name of an element type in generated names: its last segment (`f16` for `half::f16`).
fn elem_suffix(ty: &Type) -> Option<Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let seg = p.path.segments.last()?;
            seg.arguments.is_none().then(|| seg.ident.clone())
        }
        _ => None,
    }
}

/// The C type of another argument: `*const X` for `&X` (no lifetimes or generics inside), the
/// integer itself for an integer. (In forward mode, Enzyme uses a custom derivative only if every
/// argument it treats as constant is a float or an integer: `EnzymeLogic::CreateForwardDiff`
/// builds its `fixderivative_` wrapper for those, and for a constant pointer differentiates the
/// body instead. So the stream is no argument: the handles carry it; see docs/autodiff.md.)
fn c_type(ty: &Type) -> Option<TokenStream> {
    match ty {
        Type::Reference(r)
            if r.mutability.is_none() && !crate::types::mentions_lifetime(&r.elem) =>
        {
            let elem = &r.elem;
            Some(quote!(*const #elem))
        }
        Type::Path(p) if p.qself.is_none() && BY_VALUE.iter().any(|n| p.path.is_ident(n)) => {
            Some(ty.to_token_stream())
        }
        _ => None,
    }
}

/// Whether a stream parameter's type is `&Arc<CudaStream>` (else `&CudaStream`).
fn is_arc_stream(ty: &Type) -> bool {
    matches!(ty, Type::Reference(r) if matches!(&*r.elem, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Arc")))
}

/// One C-level parameter of a bridge: its name, its type, and what the rule gets from it.
struct CParam {
    name: Ident,
    shadow: Ident,
    ty: TokenStream,
    /// A fill's value: a float, which has no shadow slot in reverse mode (Enzyme returns its
    /// derivative from the reverse) and its tangent's in forward mode.
    value: bool,
}

impl Bridges<'_> {
    /// Every element type's bridges, under the cfg.
    pub fn generate(&self) -> TokenStream {
        self.elems.iter().map(|e| self.one(e)).collect()
    }

    fn one(&self, elem: &Type) -> TokenStream {
        let rule = self.rule;
        let plan = self.plan;
        let Some(extent) = plan.extent() else {
            return TokenStream::new();
        };
        let Some(suffix) = elem_suffix(elem) else {
            return TokenStream::new();
        };
        let name = &rule.func.sig.ident;
        let base = format!("rules_ad_{name}_{suffix}");
        let primal = Ident::new(&base, Span::call_site());
        let aug = format_ident!("{base}_aug");
        let rev = format_ident!("{base}_rev");
        let fwd = format_ident!("{base}_fwd");
        let reg = format_ident!("__enzyme_register_gradient_{base}");
        let reg_fwd = format_ident!("__enzyme_register_derivative_{base}");
        let safe = if self.generic {
            format_ident!("{name}_ad_{suffix}")
        } else {
            format_ident!("{name}_ad")
        };
        let ctor = super::rule_name(rule);
        let p = super::private_path(rule);
        let ad = quote!(#p::ad);
        let adbuf = match &rule.args.krate {
            Some(k) => quote!(#k::autodiff::AdBuf),
            None => {
                let k = Ident::new(DEFAULT_CRATE, Span::call_site());
                quote!(::#k::autodiff::AdBuf)
            }
        };
        let [dst_i, src_i] = plan.buffer_params();
        let stream_i = match plan.order {
            Order::Stream(s) => s,
            Order::Comm { .. } => None,
        };
        let value_i = plan.value.as_ref().map(|b| b.param);

        let mut cparams: Vec<CParam> = Vec::new(); // the C signature, in the rule's order
        let mut safe_params = Vec::new(); // the safe function's parameters
        let mut call_args = Vec::new(); // the safe function's call of the primal
        let mut ctor_args = Vec::new(); // the rule object's constructor, from the C arguments
        let mut sides: [TokenStream; 2] = Default::default(); // dst, src as `Side`s
        let mut sides_primal: [TokenStream; 2] = Default::default();
        for (i, prm) in rule.params.iter().enumerate() {
            let n = &prm.name;
            let a = format_ident!("__a_{n}");
            let d = format_ident!("__d_{n}");
            if Some(i) == stream_i {
                // The stream: from the handles (`Streams`), not an argument.
                ctor_args.push(if is_arc_stream(&prm.ty) {
                    quote!(__s.get()?)
                } else {
                    quote!(&**__s.get()?)
                });
                continue;
            }
            if Some(i) == value_i {
                // A fill's value: the element type, by value (not an argument of the
                // constructor: the rule's methods take it).
                cparams.push(CParam {
                    name: a,
                    shadow: d,
                    ty: quote!(#elem),
                    value: true,
                });
                safe_params.push(quote!(#n: #elem));
                call_args.push(quote!(#n));
                continue;
            }
            let side = if Some(i) == dst_i {
                Some((0, extent.dst_kind))
            } else if Some(i) == src_i {
                Some((1, extent.src_kind))
            } else {
                None
            };
            match side {
                Some((k, MemKind::Host)) => {
                    let (al, dl) = (format_ident!("__a_{n}_len"), format_ident!("__d_{n}_len"));
                    cparams.push(CParam {
                        name: a.clone(),
                        shadow: d.clone(),
                        ty: quote!(*mut #elem),
                        value: false,
                    });
                    cparams.push(CParam {
                        name: al.clone(),
                        shadow: dl,
                        ty: quote!(usize),
                        value: false,
                    });
                    if k == 0 {
                        safe_params.push(quote!(#n: &mut [#elem]));
                        call_args.push(quote!(#n.as_mut_ptr()));
                    } else {
                        safe_params.push(quote!(#n: &[#elem]));
                        call_args.push(quote!(#n.as_ptr().cast_mut()));
                    }
                    call_args.push(quote!(#n.len()));
                    sides[k] = quote!(#ad::Side::Slice(#a, #al, #d));
                    sides_primal[k] = quote!(#ad::Side::Slice(#a, #al, #a));
                }
                Some((k, kind)) => {
                    let kind = format_ident!("{}", capitalise(kind.name()));
                    cparams.push(CParam {
                        name: a.clone(),
                        shadow: d.clone(),
                        ty: quote!(*const #adbuf<#elem>),
                        value: false,
                    });
                    safe_params.push(quote!(#n: &#adbuf<#elem>));
                    call_args.push(quote!(#n));
                    sides[k] = quote!(#ad::Side::Handle(#a, #d, #ad::MemoryKind::#kind));
                    sides_primal[k] = quote!(#ad::Side::Handle(#a, #a, #ad::MemoryKind::#kind));
                }
                None => {
                    let ty = c_type(&prm.ty).unwrap_or_default();
                    cparams.push(CParam {
                        name: a.clone(),
                        shadow: d,
                        ty,
                        value: false,
                    });
                    match &prm.ty {
                        Type::Reference(r) => {
                            let elem = &r.elem;
                            safe_params.push(quote!(#n: &#elem));
                            call_args.push(quote!(#n));
                            ctor_args.push(quote!(&*#a));
                        }
                        ty => {
                            safe_params.push(quote!(#n: #ty));
                            call_args.push(quote!(#n));
                            ctor_args.push(quote!(#a));
                        }
                    }
                }
            }
        }
        // The runtime's wrapper for the rule object's kind: how far each side reaches comes
        // from the rule's own plan (offset + n, or its boxes).
        let wrap = match plan.kind {
            Kind::Memset => quote!(#ad::Memset),
            Kind::Fill => quote!(#ad::Fill),
            _ if plan.is_region() => quote!(#ad::Region),
            _ => quote!(#ad::Linear),
        };
        if plan.src.is_none() {
            sides[1] = quote!(#ad::Side::Absent);
            sides_primal[1] = quote!(#ad::Side::Absent);
        }
        let label = name.to_string();
        let make = quote!(|__s: #ad::Streams<'_>| ::core::result::Result::Ok(#wrap(#ctor(#(#ctor_args),*))));
        let [dst_side, src_side] = &sides;
        let [dst_p, src_p] = &sides_primal;
        let prim_params = cparams.iter().map(|c| {
            let (n, t) = (&c.name, &c.ty);
            quote!(#n: #t)
        });
        // Reverse mode: a fill's value has no shadow slot; forward mode: every argument has one.
        let pair_params: Vec<TokenStream> = cparams
            .iter()
            .map(|c| {
                let (n, s, t) = (&c.name, &c.shadow, &c.ty);
                if c.value {
                    quote!(#n: #t)
                } else {
                    quote!(#n: #t, #s: #t)
                }
            })
            .collect();
        let fwd_params = cparams.iter().map(|c| {
            let (n, s, t) = (&c.name, &c.shadow, &c.ty);
            quote!(#n: #t, #s: #t)
        });
        let (call_primal, call_aug, call_rev, call_fwd, rev_ret) =
            match cparams.iter().find(|c| c.value) {
                Some(CParam {
                    name: va,
                    shadow: vd,
                    ..
                }) => (
                    quote!(#ad::fill_primal(#label, #make, #dst_p, #va)),
                    quote!(#ad::fill_aug(#label, #make, #dst_side, #va)),
                    quote!(#ad::fill_rev(#label, #make, #dst_side, #va, __tape)),
                    quote!(#ad::fill_fwd(#label, #make, #dst_side, (#va, #vd))),
                    quote!(-> #elem),
                ),
                None => (
                    quote!(#ad::bridge_primal(#label, #make, #dst_p, #src_p)),
                    quote!(#ad::bridge_aug(#label, #make, #dst_side, #src_side)),
                    quote!(#ad::bridge_rev(#label, #make, #dst_side, #src_side, __tape)),
                    quote!(#ad::bridge_fwd(#label, #make, #dst_side, #src_side)),
                    TokenStream::new(),
                ),
            };
        let vis = &rule.func.vis;
        let doc_safe = format!(
            " `{name}` for Rust's `std::autodiff`: call it inside an `#[autodiff_reverse]` or `#[autodiff_forward]` function; Enzyme runs `{ctor}`'s augmented primal and reverse, or its forward rule, for it. A failure is recorded for `rules_runtime::autodiff::take_error` (nothing is copied)."
        );
        let doc_c_safety = format!(
            " Called by `{safe}` (references) and by Enzyme's derivatives (their shadows)."
        );
        let doc_c = format!(
            " The `extern \"C\"` primal of `{name}` (element `{suffix}`) that Enzyme sees; call `{safe}`."
        );
        quote! { #p::if_autodiff! {
            #[doc = #doc_c]
            ///
            /// # Safety
            #[doc = #doc_c_safety]
            #[unsafe(no_mangle)]
            #[inline(never)]
            #[allow(improper_ctypes_definitions, clippy::missing_safety_doc)]
            #vis unsafe extern "C" fn #primal(#(#prim_params),*) {
                // SAFETY: the arguments come from `#safe`'s references; the runtime checks the
                // handles, kinds and lengths before the rule's own checks.
                unsafe { #call_primal }
            }

            #[doc(hidden)]
            #[unsafe(no_mangle)]
            #[allow(improper_ctypes_definitions, clippy::missing_safety_doc, clippy::too_many_arguments)]
            #vis unsafe extern "C" fn #aug(#(#pair_params),*) -> *mut #ad::c_void {
                // SAFETY: Enzyme passes the primal's arguments and their shadows.
                unsafe { #call_aug }
            }

            #[doc(hidden)]
            #[unsafe(no_mangle)]
            #[allow(improper_ctypes_definitions, clippy::missing_safety_doc, clippy::too_many_arguments)]
            #vis unsafe extern "C" fn #rev(#(#pair_params,)* __tape: *mut #ad::c_void) #rev_ret {
                // SAFETY: as the augmented primal's; the tape is the one it returned.
                unsafe { #call_rev }
            }

            #[doc(hidden)]
            #[unsafe(no_mangle)]
            #[allow(improper_ctypes_definitions, clippy::missing_safety_doc, clippy::too_many_arguments)]
            #vis unsafe extern "C" fn #fwd(#(#fwd_params),*) {
                // SAFETY: as the augmented primal's.
                unsafe { #call_fwd }
            }

            #[doc(hidden)]
            #[unsafe(no_mangle)]
            #[used]
            #[allow(non_upper_case_globals)]
            static #reg: #ad::Registration<3> = #ad::Registration([
                #primal as *const (),
                #aug as *const (),
                #rev as *const (),
            ]);

            #[doc(hidden)]
            #[unsafe(no_mangle)]
            #[used]
            #[allow(non_upper_case_globals)]
            static #reg_fwd: #ad::Registration<2> = #ad::Registration([
                #primal as *const (),
                #fwd as *const (),
            ]);

            #[doc = #doc_safe]
            #[inline]
            #[allow(dead_code)]
            #vis fn #safe(#(#safe_params),*) {
                // SAFETY: every pointer comes from a reference held for the call; the bridge
                // checks the handles' kinds and pairing and every length.
                unsafe { #primal(#(#call_args),*) }
            }
        }}
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}
