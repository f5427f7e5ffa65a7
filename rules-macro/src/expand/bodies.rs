//! The part of the generated rules that depends on the kind: which rule trait the rule struct
//! implements, the plan of a call (what orders the shadow work, the extent of a pointer rule),
//! the primal's inputs on one lane, and the bounds the runtime needs that the macro could not
//! check itself. A new kind adds an arm here (and its trait in the runtime); everything around
//! it is shared.

use super::tokens::bound_at;
use super::{Generator, Parts};
use crate::model::Kind;
use crate::plan::{Access, Extent, Order};
use crate::types::{
    elem_name, element_of, host_container_elem, is_array_type, known_elem, mentions_lifetime,
};
use proc_macro2::TokenStream;
use quote::quote;
use syn::Type;

/// Element types NCCL sums, by canonical name: no bound is needed for them.
const NCCL_ELEMENTS: &[&str] = &["f32", "f64", "f16", "bf16"];

/// Buffer types the macro knows by name to hold shadows (their element is their first type
/// argument, which the checks compare): no `ShadowMemory` bound is written for them. The trait's
/// own bound still checks them (a user type of the same name is refused there).
const KNOWN_BUFFERS: &[&str] = &[
    "CudaSlice",
    "CudaViewMut",
    "PinnedHostSlice",
    "UnifiedSlice",
];

/// The trait parts of `g`'s rule. `order` is what orders the shadow work (an `On` for copies, a
/// `Collective` for collectives).
pub fn parts(g: &Generator<'_>, order: &TokenStream) -> Parts {
    let p = &g.p;
    let s = g.order_lifetime();
    let (x, y) = (g.dst_ty.as_ref(), g.src_ty.as_ref());
    if g.plan.is_region()
        && let Some(x) = x
    {
        return super::region::parts(g, order, x, y);
    }
    let on =
        matches!(g.plan.order, Order::Stream(Some(_))).then(|| (quote!(#p::On<#s>), order.clone()));
    let host = quote!(#p::On::Host);
    match (g.plan.kind, &g.plan.access, x, y) {
        (Kind::Copy, Access::Slice, Some(x), Some(y)) => Parts {
            trait_name: quote!(CopyRule),
            trait_text: "CopyRule",
            on_only: true,
            args: quote!(#x, #y),
            plan: on,
            default_plan: host,
            inputs: quote!(__d: &mut #x, __s: &#y),
            raw: false,
            bounds: copy_bounds(p, x, y),
        },
        (Kind::Copy, Access::Pointer(e), Some(t), Some(_)) => {
            let bounds = if known_elem(t) {
                TokenStream::new()
            } else {
                bound_at(t, &quote!(#p::Differentiable))
            };
            let shape = extent(g, e);
            Parts {
                trait_name: quote!(RawCopyRule),
                trait_text: "RawCopyRule",
                on_only: false,
                args: quote!(#t),
                plan: Some((quote!((#p::On<#s>, #p::PtrCopy)), quote!((#order, #shape)))),
                default_plan: host,
                inputs: quote!(__d: *mut #t, __s: *const #t),
                raw: true,
                bounds,
            }
        }
        (_, _, Some(x), Some(y)) => {
            let mut bounds = collective_bounds(p, x, quote!(CollectiveDst));
            bounds.extend(collective_bounds(p, y, quote!(CollectiveSrc)));
            if x != y {
                // The very bound the trait asks for: the solver then needs no normalisation of
                // `X`'s element, which a where-clause on `X` would keep it from doing.
                // A cudarc buffer's element is named as its type argument (which `x`'s own bound
                // states): a projection of a concrete type overflows the solver.
                let target = match element_of(x) {
                    Some(e) if known_buffer_name(x) => quote!(#e),
                    _ => quote!(<#x as #p::ShadowRead>::Elem),
                };
                bounds.extend(buffer_bound(y, &quote!(#p::CollectiveSrc<Elem = #target>)));
            }
            collective_parts(g, "CollectiveRule", quote!(#x, #y), order, bounds)
                .inputs(quote!(__d: &mut #x, __s: &#y))
        }
        (_, _, None, Some(y)) => {
            let bounds = collective_bounds(p, y, quote!(CollectiveSrc));
            collective_parts(g, "SendRule", quote!(#y), order, bounds).inputs(quote!(__s: &#y))
        }
        (_, _, Some(x), None) => {
            let bounds = collective_bounds(p, x, quote!(CollectiveDst));
            collective_parts(g, "RecvRule", quote!(#x), order, bounds).inputs(quote!(__d: &mut #x))
        }
        // Every kind has a buffer (checked); nothing to generate otherwise.
        (_, _, None, None) => {
            collective_parts(g, "SendRule", quote!([f32]), order, TokenStream::new())
        }
    }
}

impl Parts {
    /// These parts with the primal's inputs.
    fn inputs(self, inputs: TokenStream) -> Self {
        Parts { inputs, ..self }
    }
}

/// A collective's parts: its plan is the collective on its communicator.
fn collective_parts(
    g: &Generator<'_>,
    trait_text: &'static str,
    args: TokenStream,
    order: &TokenStream,
    bounds: TokenStream,
) -> Parts {
    let p = &g.p;
    let s = g.order_lifetime();
    let trait_name = syn::Ident::new(trait_text, proc_macro2::Span::call_site());
    Parts {
        trait_name: quote!(#trait_name),
        trait_text,
        on_only: false,
        args,
        plan: Some((quote!(#p::Collective<#s>), order.clone())),
        default_plan: order.clone(),
        inputs: TokenStream::new(),
        raw: false,
        bounds,
    }
}

/// A bound on a buffer type, written at the type: checked where the rule is defined. A type with
/// a lifetime gets none (a bound on it would be checked only where the rule is used, and fail
/// there as "the method exists but its trait bounds were not satisfied"): the rule trait's own
/// bound checks it where the rule is defined, at the impl's trait, which [`Generator::trait_span`]
/// places at the type.
fn buffer_bound(ty: &Type, bound: &TokenStream) -> TokenStream {
    if mentions_lifetime(ty) {
        TokenStream::new()
    } else {
        bound_at(ty, bound)
    }
}

/// Whether the trait's own bound on `x` is the check of it (see [`buffer_bound`]): a buffer type
/// the macro does not know, with a lifetime.
pub(super) fn checked_by_trait(x: &Type) -> bool {
    mentions_lifetime(x) && host_container_elem(x).is_none() && !known_buffer(x)
}

/// Whether the macro knows `x` by name to hold shadows (see [`KNOWN_BUFFERS`]).
fn known_buffer(x: &Type) -> bool {
    known_buffer_name(x) && element_of(x).is_some_and(known_elem)
}

/// Whether `x` is one of [`KNOWN_BUFFERS`] by name, whatever its element: its element is its
/// type argument, which a bound can name instead of a projection (`<CudaSlice<Real> as
/// ShadowRead>::Elem` in a `where` clause sends the solver into an overflow).
fn known_buffer_name(x: &Type) -> bool {
    matches!(x, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| KNOWN_BUFFERS.contains(&s.ident.to_string().as_str())))
}

/// The element of one of [`KNOWN_BUFFERS`], whatever it is: its type argument.
fn named_buffer_elem(x: &Type) -> Option<&Type> {
    known_buffer_name(x).then(|| element_of(x)).flatten()
}

/// The bounds that make a slice copy's buffers usable: `ShadowMemory` for opaque buffer types
/// (`ShadowRead` for a source of its own type: its primal is only read, so it may be read-only
/// memory, such as a `CudaView` given for a generic `S`), `Differentiable` for elements the macro
/// could not name, and equal elements (unless the macro could compare them itself, or the two
/// types are one).
pub(super) fn copy_bounds<'a>(p: &TokenStream, dst: &'a Type, src: &'a Type) -> TokenStream {
    let mut out = TokenStream::new();
    let same = |a: &Type, b: &Type| a == b;
    let types: &[&Type] = if same(dst, src) { &[dst] } else { &[dst, src] };
    // A CUDA array's element is its type argument; in a rule on an array every opaque buffer's
    // bound says it: a bare `ShadowMemory` bound would hide the impls' `Elem` from the solver.
    let array_elem = |t: &'a Type| is_array_type(t).then(|| element_of(t)).flatten();
    let shared = array_elem(dst).or_else(|| array_elem(src));
    for (i, x) in types.iter().enumerate() {
        let memory = match i {
            0 => quote!(#p::ShadowMemory),
            _ => quote!(#p::ShadowRead),
        };
        match (host_container_elem(x), shared) {
            (Some(e), _) if known_elem(e) => {}
            (Some(e), _) => out.extend(bound_at(e, &quote!(#p::Differentiable))),
            (None, _) if known_buffer(x) => {}
            (None, Some(e)) => out.extend(buffer_bound(x, &quote!(#memory<Elem = #e>))),
            // A cudarc buffer of an element the macro cannot name (`T`, an alias): the bound
            // says its element, which a bare bound would hide from the solver behind the
            // `where` clause.
            (None, None) if known_buffer_name(x) && element_of(x).is_some() => {
                let e = element_of(x);
                out.extend(buffer_bound(x, &quote!(#memory<Elem = #e>)));
            }
            (None, None) => out.extend(buffer_bound(x, &memory)),
        }
    }
    let elem = |t: &'a Type| {
        host_container_elem(t)
            .or_else(|| array_elem(t))
            .or_else(|| known_buffer_name(t).then(|| element_of(t)).flatten())
    };
    let (de, se) = (elem(dst), elem(src));
    let compare = match (de, se) {
        (Some(d), Some(s)) => (!known_elem(d) || !known_elem(s)) && !same(d, s),
        _ => !same(dst, src),
    };
    if compare {
        // The destination's element, named without a projection onto the source's own type,
        // which the trait solver could not resolve.
        let target = de.map_or_else(|| quote!(<#dst as #p::ShadowRead>::Elem), |d| quote!(#d));
        out.extend(buffer_bound(src, &quote!(#p::ShadowRead<Elem = #target>)));
    }
    out
}

/// A collective buffer's bounds: the buffer trait at its type, and `NcclElement` at an element
/// the macro does not know by name.
fn collective_bounds(p: &TokenStream, buffer: &Type, bound: TokenStream) -> TokenStream {
    // As in `copy_bounds`: a cudarc buffer of an element the macro cannot name says it. A named
    // element keeps the bare bound: beside the pair's `Elem = <X as ShadowRead>::Elem` bound, an
    // `Elem = f32` one leaves the solver two answers to pick from (E0284 at the rule).
    let mut out = match named_buffer_elem(buffer).filter(|e| !known_elem(e)) {
        Some(e) => buffer_bound(buffer, &quote!(#p::#bound<Elem = #e>)),
        None => buffer_bound(buffer, &quote!(#p::#bound)),
    };
    match element_of(buffer) {
        Some(e) if elem_name(e).is_some_and(|n| NCCL_ELEMENTS.contains(&n.as_str())) => {}
        Some(e) => out.extend(bound_at(e, &quote!(#p::NcclElement))),
        None => {}
    }
    out
}

/// `MemoryKind::Device` and the like.
pub(super) fn memory_kind(p: &TokenStream, k: crate::model::MemKind) -> TokenStream {
    let mut name = k.name().to_string();
    name[..1].make_ascii_uppercase();
    let v = syn::Ident::new(&name, proc_macro2::Span::call_site());
    quote!(#p::MemoryKind::#v)
}

/// The parameter `i` as the generated code reaches it, or `0usize` when there is none.
pub(super) fn arg_or_zero(g: &Generator<'_>, i: Option<usize>) -> TokenStream {
    let Some(i) = i else {
        return quote!(0usize);
    };
    // Through `extent`, bounded at the user's type: an alias of `usize` passes, anything else
    // is one error there (the macro only refuses what it can tell by name).
    let arg = g.arg(i);
    let ty = &g.rule.params[i].ty;
    if crate::check::usize_by_name(ty) == Some(true) {
        return arg;
    }
    let p = &g.p;
    let at = super::tokens::first_span(ty);
    super::tokens::respan(quote!(#p::extent(#arg)), at)
}

/// The `PtrCopy` value of a pointer rule: memory kinds, offsets, length.
fn extent(g: &Generator<'_>, e: &Extent) -> TokenStream {
    let p = &g.p;
    let (dk, sk) = (memory_kind(p, e.dst_kind), memory_kind(p, e.src_kind));
    let (doff, soff) = (arg_or_zero(g, e.dst_offset), arg_or_zero(g, e.src_offset));
    let n = arg_or_zero(g, e.len);
    quote! {
        #p::PtrCopy { dst_kind: #dk, src_kind: #sk, dst_offset: #doff, src_offset: #soff, n: #n }
    }
}
