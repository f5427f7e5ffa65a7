//! The `autodiff` option's checks: which rules can be bridged, how each buffer side reaches its
//! bridge ([`Form`]), and the element types. Every misuse is one error at the token at fault.

use crate::ctxt::Ctxt;
use crate::model::{AUTODIFF, Kind, MemKind};
use crate::parse::Rule;
use crate::plan::{Access, Order, Plan};
use crate::types::{element_of, is_array_type};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{GenericParam, Ident, Type};

/// Integer types a bridge passes by value (Enzyme's shadow slot holds the same value).
const BY_VALUE: &[&str] = &[
    "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64",
];

/// How a buffer argument reaches its bridge, and what the rule gets from it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A pointer rule's pageable host side: a slice (pointer and length).
    HostPtr,
    /// A pointer rule's side of another declared kind: an `AdBuf` handle of that kind.
    Handle(MemKind),
    /// A CUDA array (`&mut CudaArray<T>`, `&CudaArray<T>`): an `AdArray` handle.
    Array,
    /// An array rule's linear side taken as `RawShadow<T>`, or as a type parameter bounded by
    /// `Linear` (the bridge passes `RawShadow<T>`): an `AdBuf` handle of any memory kind.
    Buf,
    /// An array rule's linear side taken as `[T]`: a pageable host slice.
    Slice,
}

/// A checked `autodiff` option: what the bridges are generated from.
pub struct Bridges<'a> {
    pub rule: &'a Rule,
    pub plan: &'a Plan,
    /// The element types, and whether the rule is generic (names get the element's suffix).
    pub elems: Vec<Type>,
    pub generic: bool,
    /// How `dst` and `src` reach the bridge (`None`: no such side).
    pub forms: [Option<Form>; 2],
}

impl Bridges<'_> {
    /// Whether the rule takes references with a CUDA array side (the `array_*` bridges).
    pub fn arrays(&self) -> bool {
        self.plan.extent().is_none()
    }
}

/// Checks the option against the rule; `None` (errors recorded) when it cannot be bridged, or
/// when there is no option.
pub fn check<'a>(cx: &Ctxt, rule: &'a Rule, plan: &'a Plan) -> Option<Bridges<'a>> {
    let arg = rule.args.autodiff.as_ref()?;
    let at = &arg.tokens;
    let errors = cx.has_errors();
    let refused = match plan.kind {
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
            format!("`{AUTODIFF}` bridges pointer `copy`, `copy2d`, `copy3d`, `memset` and `fill` rules, and those with a CUDA array side; {why}: remove `{AUTODIFF}`"),
        );
        return None;
    }
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
    let [dst, src] = plan.buffer_params();
    let (forms, elem, linear_param) = match &plan.access {
        Access::Pointer(extent) => {
            let form = |k| match k {
                MemKind::Host => Form::HostPtr,
                k => Form::Handle(k),
            };
            let forms = [
                dst.map(|_| form(extent.dst_kind)),
                src.map(|_| form(extent.src_kind)),
            ];
            (forms, plan.dst.as_ref().map(|b| b.ty.clone()), None)
        }
        Access::Slice if plan.region.has_array() => array_forms(cx, rule, plan, &generics)?,
        Access::Slice => {
            cx.error_spanned_by(
                at,
                format!("`{AUTODIFF}` needs a pointer rule (`#[dst] dst: *mut T`, `#[src] src: *const T`, with `dst = ..` and `src = ..` in the attribute), or a rule with a CUDA array side: Enzyme passes raw pointers and their shadows, not references to buffers"),
            );
            return None;
        }
    };
    if rule.args.in_impl {
        cx.error_spanned_by(at, format!("`{AUTODIFF}` is not available with `in_impl`: the bridges are free functions; annotate a free function"));
    }
    if let Some(extent) = plan.extent()
        && plan.kind == Kind::Copy
        && !plan.is_region()
        && extent.len.is_none()
    {
        cx.error_spanned_by(
            at,
            format!("`{AUTODIFF}` needs the copy's length as a `#[len]` parameter"),
        );
    }
    if rule.func.sig.generics.const_params().next().is_some() {
        cx.error_spanned_by(&rule.func.sig.generics, format!("`{AUTODIFF}` cannot bridge a rule with const parameters: each bridge is one `extern \"C\"` function"));
    }
    // The type parameters the bridges fill in: the element type, from the list; an array
    // rule's linear side, `RawShadow<T>`.
    let elem_generics: Vec<&Ident> = generics
        .iter()
        .copied()
        .filter(|g| linear_param.as_ref() != Some(*g))
        .collect();
    let (elems, generic) = match (&arg.elems, elem_generics.as_slice()) {
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
                format!("`{}` is generic over `{t}`: `{AUTODIFF}` needs the element types to bridge (one `extern \"C\"` function each, as an exported symbol cannot be generic), e.g. `{AUTODIFF}(f32, f64)`", rule.func.sig.ident),
            );
            (Vec::new(), true)
        }
        (Some(list), [t]) => {
            if !elem.as_ref().is_some_and(|e| is_ident(e, t)) {
                cx.error_spanned_by(&rule.func.sig.generics, format!("`{AUTODIFF}(...)` lists element types: the generic parameter `{t}` must be the buffers' element type"));
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
            // Each parameter that is not the element type, at its name.
            let elem_param = elem
                .as_ref()
                .and_then(|e| many.iter().find(|g| is_ident(e, g)));
            for g in many.iter().filter(|g| Some(*g) != elem_param) {
                cx.error_spanned_by(g, format!("`{AUTODIFF}` cannot bridge a rule generic over `{g}`: the bridges fill in the element type (from `{AUTODIFF}(...)`) and an array rule's linear side (`RawShadow<T>`), nothing else"));
            }
            (Vec::new(), true)
        }
    };
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
        let handled = forms
            .iter()
            .flatten()
            .any(|f| !matches!(f, Form::HostPtr | Form::Slice));
        if !handled {
            let no_src = plan.src.is_none();
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
        forms,
    })
}

/// The sides of a rule with a CUDA array side, its element type (the arrays'), and the type
/// parameter its linear side is (the bridges pass `RawShadow<T>` for it), if any.
#[allow(clippy::type_complexity)]
fn array_forms(
    cx: &Ctxt,
    rule: &Rule,
    plan: &Plan,
    generics: &[&Ident],
) -> Option<([Option<Form>; 2], Option<Type>, Option<Ident>)> {
    let mut forms = [None, None];
    let mut elem = None;
    let mut linear = None;
    let mut ok = true;
    for (k, b) in [&plan.dst, &plan.src].into_iter().enumerate() {
        let Some(b) = b else { continue };
        let x = &b.ty;
        let at = &rule.params[b.param].ty;
        if is_array_type(x) {
            forms[k] = Some(Form::Array);
            if elem.is_none() {
                elem = element_of(x).cloned();
            }
            continue;
        }
        match x {
            Type::Slice(_) => forms[k] = Some(Form::Slice),
            Type::Path(p)
                if p.qself.is_none()
                    && p.path
                        .segments
                        .last()
                        .is_some_and(|s| s.ident == "RawShadow") =>
            {
                forms[k] = Some(Form::Buf)
            }
            Type::Path(p) if generics.iter().any(|g| p.path.is_ident(*g)) => {
                forms[k] = Some(Form::Buf);
                linear = p.path.get_ident().cloned();
            }
            _ => {
                cx.error_spanned_by(
                    at,
                    format!("`{AUTODIFF}` takes an array rule's linear side as a pageable slice (`[T]`), a `RawShadow<T>`, or a type parameter bounded by `Linear` (the bridge passes a `RawShadow<T>` made from an `AdBuf` handle of any memory kind); `{}` is none of them", crate::types::show(x)),
                );
                ok = false;
            }
        }
    }
    ok.then_some((forms, elem, linear))
}

/// Whether `ty` is the path `t`.
fn is_ident(ty: &Type, t: &Ident) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident(t))
}

/// The name of an element type in generated names: its last segment (`f16` for `half::f16`).
pub fn elem_suffix(ty: &Type) -> Option<Ident> {
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
pub fn c_type(ty: &Type) -> Option<TokenStream> {
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
