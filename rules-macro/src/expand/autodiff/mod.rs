//! The `autodiff` option: bridges that let Rust's `std::autodiff` (Enzyme inside rustc) call a
//! rule's rules: pointer rules (`copy`, `copy2d`, `copy3d`, `memset`, `fill`), and rules on
//! references with a CUDA array side (copies to, from or between arrays, an array's `memset` or
//! `fill`). Generated beside the rule item, all inside the runtime's
//! `__private::if_autodiff!`, which emits them only with the runtime's `autodiff` feature (a
//! stable build never sees them; a `#[cfg]` here would trip `unexpected_cfgs` in every user
//! crate), one set per element type (without the feature, only a stand-in `<name>_ad` whose
//! calls fail to compile with a message naming the feature):
//!
//! - `rules_ad_<name>_<elem>`: the `#[inline(never)] extern "C"` primal Enzyme
//!   cannot see into (it returns nothing and uses every argument, as Enzyme needs);
//! - `..._aug` / `..._rev`: its augmented primal and reverse, Enzyme's calling convention (each
//!   argument followed by its shadow slot), which call the rule object's `augmented_primal` /
//!   `reverse` through the runtime (`__private::ad`). The augmented primal returns nothing: it
//!   keeps its tape on the runtime's per-thread stack with the call's arguments (`..._args`), and
//!   the reverse of the same arguments takes it (an augmented primal returning a tape makes
//!   rustc's Enzyme print both functions' IR into the build's output);
//! - `__enzyme_register_gradient_rules_ad_<name>_<elem>`: the static Enzyme's `preserve-nvvm`
//!   pass reads, `[primal, aug, rev]`;
//! - `<name>_ad` (`<name>_ad_<elem>` for a generic rule): the safe function users call inside the
//!   differentiated function, which lowers to the primal. Pageable host sides are slices; the
//!   others are handles made outside: `&AdBuf<T>` of an `AdPair`, `&AdArray<T>` of an
//!   `AdArrayPair` ([`Form`]).
//!
//! The rule object is handed to the runtime in the wrapper its kind needs (`Linear`, `Region`,
//! `Memset`, `Fill` for pointer rules, which say from the rule's plan how far each side reaches;
//! `RefRegion`, `RefMemset`, `RefFill` for array rules, whose references the rule checks itself).
//! A fill's value is a float: no shadow slot in reverse mode (Enzyme returns its derivative from
//! the reverse, whose return type it is), its tangent's in forward mode. Other slice rules and
//! collectives have no bridges: the misuse is reported by `check`, at the `autodiff` word.

mod check;

pub use check::{Bridges, check};

use crate::model::{DEFAULT_CRATE, Kind};
use crate::plan::Order;
use check::{Form, c_type, elem_suffix};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Ident, Type};

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
        // The symbols: the module's path, the name and the crate's version, so that two rules of
        // one name in two modules, or two versions of one crate in a binary, each keep their own
        // (one package at one version from two sources is refused by cargo; a clash left is
        // the linker's "duplicate symbol" error, never one crate's bridge called for the other's).
        let version = std::env::var("CARGO_PKG_VERSION")
            .map(|v| format!("_v{v}"))
            .unwrap_or_default();
        let symbol = |prefix: &str, name: &str| {
            quote!(concat!(#prefix, module_path!(), "::", #name, #version))
        };
        let [sym_primal, sym_aug, sym_rev, sym_fwd] =
            ["", "_aug", "_rev", "_fwd"].map(|s| symbol("", &format!("{base}{s}")));
        let sym_reg = symbol("__enzyme_register_gradient_", &base);
        let sym_reg_fwd = symbol("__enzyme_register_derivative_", &base);
        let safe = if self.generic {
            format_ident!("{name}_ad_{suffix}")
        } else {
            format_ident!("{name}_ad")
        };
        let ctor = super::rule_name(rule);
        let p = super::private_path(rule);
        let ad = quote!(#p::ad);
        let autodiff = match &rule.args.krate {
            Some(k) => quote!(#k::autodiff),
            None => {
                let k = Ident::new(DEFAULT_CRATE, Span::call_site());
                quote!(::#k::autodiff)
            }
        };
        let (adbuf, adarray) = (quote!(#autodiff::AdBuf), quote!(#autodiff::AdArray));
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
                self.forms[0].map(|f| (0, f))
            } else if Some(i) == src_i {
                self.forms[1].map(|f| (1, f))
            } else {
                None
            };
            match side {
                Some((k, form @ (Form::HostPtr | Form::Slice))) => {
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
                    let slice = match form {
                        Form::Slice => quote!(#ad::SliceSide),
                        _ => quote!(#ad::Side::Slice),
                    };
                    sides[k] = quote!(#slice(#a, #al, #d));
                    sides_primal[k] = quote!(#slice(#a, #al, #a));
                }
                Some((k, form @ (Form::Array | Form::Buf))) => {
                    let (ty, side) = match form {
                        Form::Array => (quote!(#adarray<#elem>), quote!(#ad::ArraySide)),
                        _ => (quote!(#adbuf<#elem>), quote!(#ad::BufSide)),
                    };
                    cparams.push(CParam {
                        name: a.clone(),
                        shadow: d.clone(),
                        ty: quote!(*const #ty),
                        value: false,
                    });
                    safe_params.push(quote!(#n: &#ty));
                    call_args.push(quote!(#n));
                    sides[k] = quote!(#side(#a, #d));
                    sides_primal[k] = quote!(#side(#a, #a));
                }
                Some((k, Form::Handle(kind))) => {
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
        let arrays = self.arrays();
        let wrap = match plan.kind {
            Kind::Memset if arrays => quote!(#ad::RefMemset),
            Kind::Fill if arrays => quote!(#ad::RefFill),
            _ if arrays => quote!(#ad::RefRegion),
            Kind::Memset => quote!(#ad::Memset),
            Kind::Fill => quote!(#ad::Fill),
            _ if plan.is_region() => quote!(#ad::Region),
            _ => quote!(#ad::Linear),
        };
        if plan.src.is_none() {
            // No source (a memset): a pointer rule's is `Absent`, an array rule's `None` (of a
            // side type the memset wrapper ignores).
            let none = match arrays {
                true => quote!(::core::option::Option::None::<#ad::ArraySide<#elem>>),
                false => quote!(#ad::Side::Absent),
            };
            sides[1] = none.clone();
            sides_primal[1] = none;
        } else if arrays {
            for s in [&mut sides[1], &mut sides_primal[1]] {
                *s = quote!(::core::option::Option::Some(#s));
            }
        }
        let label = name.to_string();
        let make = quote!(|__s: #ad::Streams<'_>| ::core::result::Result::Ok(#wrap(#ctor(#(#ctor_args),*))));
        let [dst_side, src_side] = &sides;
        let [dst_p, src_p] = &sides_primal;
        let prim_params: Vec<TokenStream> = cparams
            .iter()
            .map(|c| {
                let (n, t) = (&c.name, &c.ty);
                quote!(#n: #t)
            })
            .collect();
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
        // The runtime's bridge functions: `fill_*` / `bridge_*` for pointer rules, `array_fill_*`
        // / `array_*` for array rules.
        let (copies, fills) = match arrays {
            true => ("array_", "array_fill_"),
            false => ("bridge_", "fill_"),
        };
        let f =
            |prefix: &str, name: &str| Ident::new(&format!("{prefix}{name}"), Span::call_site());
        // The augmented primal keeps its tape with the call's arguments (`take` gives it to the
        // reverse of the same arguments): a fill's value is not among them (its slot in reverse
        // mode has no shadow).
        let args = format_ident!("{base}_args");
        let keyed: Vec<&CParam> = cparams.iter().filter(|c| !c.value).collect();
        let key_fields: Vec<&Ident> = keyed.iter().map(|c| &c.name).collect();
        let key_shadows: Vec<&Ident> = keyed.iter().map(|c| &c.shadow).collect();
        let key_defs = keyed.iter().map(|c| {
            let (n, t) = (&c.name, &c.ty);
            quote!(#n: #t)
        });
        let key_args = quote!(#args { #(#key_fields),* });
        let key_shadow = quote!(#args { #(#key_fields: #key_shadows),* });
        let (call_primal, call_aug, call_rev, call_fwd, rev_ret) =
            match cparams.iter().find(|c| c.value) {
                Some(CParam {
                    name: va,
                    shadow: vd,
                    ..
                }) => {
                    let [pr, au, re, fw] = ["primal", "aug", "rev", "fwd"].map(|n| f(fills, n));
                    (
                        quote!(#ad::#pr(#label, #make, #dst_p, #va)),
                        quote!(#ad::#au(#label, #make, #dst_side, #va)),
                        quote!(match #ad::take(#label, &#key_args, &#key_shadow) {
                            // SAFETY: the tape the augmented primal of these arguments saved.
                            ::core::option::Option::Some(__tape) => unsafe {
                                #ad::#re(#label, #make, #dst_side, #va, __tape)
                            },
                            ::core::option::Option::None => <#elem as #ad::Differentiable>::zero(),
                        }),
                        quote!(#ad::#fw(#label, #make, #dst_side, (#va, #vd))),
                        quote!(-> #elem),
                    )
                }
                None => {
                    let [pr, au, re, fw] = ["primal", "aug", "rev", "fwd"].map(|n| f(copies, n));
                    (
                        quote!(#ad::#pr(#label, #make, #dst_p, #src_p)),
                        quote!(#ad::#au(#label, #make, #dst_side, #src_side)),
                        quote!(if let ::core::option::Option::Some(__tape) =
                            #ad::take(#label, &#key_args, &#key_shadow)
                        {
                            // SAFETY: the tape the augmented primal of these arguments saved.
                            unsafe { #ad::#re(#label, #make, #dst_side, #src_side, __tape) }
                        }),
                        quote!(#ad::#fw(#label, #make, #dst_side, #src_side)),
                        TokenStream::new(),
                    )
                }
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
        // Without the runtime's `autodiff` feature, `<name>_ad` stands in with the same number
        // of parameters, the first bounded by a trait no type implements: its calls fail to
        // compile with a message that names the feature (a missing function would say only
        // "cannot find function"), and a rule that is never called compiles as before.
        let stand_in_params = (0..safe_params.len()).map(|i| {
            if i == 0 {
                quote!(_: impl #p::NeedsAutodiffFeature)
            } else {
                quote!(_: impl ::core::marker::Sized)
            }
        });
        quote! { #p::if_autodiff! { {
            #[doc(hidden)]
            #[derive(Clone, Copy, PartialEq)]
            #[allow(non_camel_case_types)]
            #vis struct #args {
                #(#key_defs),*
            }

            #[doc = #doc_c]
            ///
            /// # Safety
            #[doc = #doc_c_safety]
            #[unsafe(export_name = #sym_primal)]
            #[inline(never)]
            #[allow(improper_ctypes_definitions, clippy::missing_safety_doc, clippy::too_many_arguments)]
            #vis unsafe extern "C" fn #primal(#(#prim_params),*) {
                // SAFETY: the arguments come from `#safe`'s references; the runtime checks the
                // handles, kinds and lengths before the rule's own checks.
                unsafe { #call_primal }
            }

            #[doc(hidden)]
            #[unsafe(export_name = #sym_aug)]
            #[allow(improper_ctypes_definitions, clippy::missing_safety_doc, clippy::too_many_arguments)]
            #vis unsafe extern "C" fn #aug(#(#pair_params),*) {
                // SAFETY: Enzyme passes the primal's arguments and their shadows.
                let __tape = unsafe { #call_aug };
                #ad::save(#key_args, #key_shadow, __tape);
            }

            #[doc(hidden)]
            #[unsafe(export_name = #sym_rev)]
            #[allow(improper_ctypes_definitions, clippy::missing_safety_doc, clippy::too_many_arguments)]
            #vis unsafe extern "C" fn #rev(#(#pair_params),*) #rev_ret {
                #call_rev
            }

            #[doc(hidden)]
            #[unsafe(export_name = #sym_fwd)]
            #[allow(improper_ctypes_definitions, clippy::missing_safety_doc, clippy::too_many_arguments)]
            #vis unsafe extern "C" fn #fwd(#(#fwd_params),*) {
                // SAFETY: as the augmented primal's.
                unsafe { #call_fwd }
            }

            #[doc(hidden)]
            #[unsafe(export_name = #sym_reg)]
            #[used]
            #[allow(non_upper_case_globals)]
            static #reg: #ad::Registration<3> = #ad::Registration([
                #primal as *const (),
                #aug as *const (),
                #rev as *const (),
            ]);

            #[doc(hidden)]
            #[unsafe(export_name = #sym_reg_fwd)]
            #[used]
            #[allow(non_upper_case_globals)]
            static #reg_fwd: #ad::Registration<2> = #ad::Registration([
                #primal as *const (),
                #fwd as *const (),
            ]);

            #[doc = #doc_safe]
            #[inline]
            #[allow(dead_code, clippy::too_many_arguments)]
            #vis fn #safe(#(#safe_params),*) {
                // SAFETY: every pointer comes from a reference held for the call; the bridge
                // checks the handles' kinds and pairing and every length.
                unsafe { #primal(#(#call_args),*) }
            }
        } else {
            #[doc(hidden)]
            #[allow(dead_code, clippy::too_many_arguments)]
            #vis fn #safe(#(#stand_in_params),*) {}
        } }}
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}
