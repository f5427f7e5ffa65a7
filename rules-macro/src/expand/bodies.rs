//! The part of the generated rules that depends on the kind: which runtime bodies the three
//! functions call, and the bounds those bodies need that the macro could not check itself. A new
//! kind adds an arm here (and its runtime bodies); everything around it is shared.

use super::tokens::bound_at;
use super::{Bodies, Generator};
use crate::model::Kind;
use crate::plan::{Access, Extent};
use crate::types::{elem_name, element_of, host_container_elem, is_array_type, known_elem};
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::Type;

/// Element types NCCL sums, by canonical name: no bound is needed for them.
const NCCL_ELEMENTS: &[&str] = &["f32", "f64", "f16", "bf16"];

/// The bodies of `g`'s rule. `order` is what orders the shadow work (an `On` for copies, a
/// `Collective` for collectives); `primal` is the primal as the runtime calls it.
pub fn bodies(g: &Generator<'_>, order: &TokenStream, primal: &TokenStream) -> Bodies {
    let p = &g.p;
    let tape = &g.tape;
    let name = |i: usize| &g.rule.params[i].name;
    let [dst, src] = g.plan.buffer_params();
    let (d, s) = (dst.map(name), src.map(name));
    let (x, y) = (g.dst_ty.as_ref(), g.src_ty.as_ref());
    if g.plan.is_region()
        && let Some(x) = x
    {
        return super::region::bodies(g, order, primal, x, y);
    }
    match (g.plan.kind, &g.plan.access, x, y) {
        (Kind::Copy, Access::Slice, Some(x), Some(y)) => Bodies {
            bounds: activity_bounds(
                p,
                x,
                y,
                quote!(DstArg),
                quote!(SrcArg),
                copy_bounds(p, x, y),
            ),
            forward: quote!(#p::copy_forward(#order, #d, #s, #primal)),
            augmented: quote!(#p::copy_augmented_primal(#d, #s, #primal)),
            reverse: quote!(#p::copy_reverse(#order, #tape, #d, #s)),
            ..Bodies::default()
        },
        (Kind::Copy, Access::Pointer(e), Some(t), Some(_)) => {
            let elem = if known_elem(t) {
                TokenStream::new()
            } else {
                bound_at(t, &quote!(#p::Differentiable))
            };
            let shape = extent(g, e);
            Bodies {
                bounds: activity_bounds(p, t, t, quote!(DstPtr), quote!(SrcPtr), elem),
                forward: quote!(unsafe { #p::ptr_copy_forward(#order, #shape, #d, #s, #primal) }),
                augmented: quote!(unsafe { #p::ptr_copy_augmented_primal(#shape, #d, #s, #primal) }),
                reverse: quote!(unsafe { #p::ptr_copy_reverse(#order, #shape, #tape, #d, #s) }),
                ..Bodies::default()
            }
        }
        (_, _, Some(x), Some(y)) => {
            let mut own = collective_bounds(p, x, quote!(CollectiveDst));
            own.extend(collective_bounds(p, y, quote!(CollectiveSrc)));
            if x.to_token_stream().to_string() != y.to_token_stream().to_string() {
                // The very bound the runtime asks for: the solver then needs no normalisation of
                // `X`'s element, which a where-clause on `X` would keep it from doing.
                own.extend(bound_at(
                    y,
                    &quote!(#p::ShadowMemory<Elem = <#x as #p::ShadowRead>::Elem>),
                ));
            }
            Bodies {
                bounds: activity_bounds(p, x, y, quote!(DstArg), quote!(SrcArg), own),
                forward: quote!(#p::collective_forward(#order, #d, #s, #primal)),
                augmented: quote!(#p::collective_augmented_primal(#order, #d, #s, #primal)),
                reverse: quote!(#p::collective_reverse(#order, #tape, #d, #s)),
                ..Bodies::default()
            }
        }
        (_, _, None, Some(y)) => {
            let mut bounds = quote!(__Src: #p::SrcArg<#y>,);
            bounds.extend(collective_bounds(p, y, quote!(CollectiveSrc)));
            Bodies {
                bounds,
                forward: quote!(#p::send_forward(#order, #s, #primal)),
                augmented: quote!(#p::send_augmented_primal(#order, #s, #primal)),
                reverse: quote!(#p::send_reverse(#order, #tape, #s)),
                ..Bodies::default()
            }
        }
        (_, _, Some(x), None) => {
            let mut bounds = quote!(__Dst: #p::DstArg<#x>,);
            bounds.extend(collective_bounds(p, x, quote!(CollectiveDst)));
            Bodies {
                bounds,
                forward: quote!(#p::recv_forward(#order, #d, #primal)),
                augmented: quote!(#p::recv_augmented_primal(#order, #d, #primal)),
                reverse: quote!(#p::recv_reverse(#order, #tape, #d)),
                ..Bodies::default()
            }
        }
        // Every kind has a buffer (checked); nothing to generate otherwise.
        (_, _, None, None) => Bodies::default(),
    }
}

/// `__Dst: DstArg<X>, __Src: SrcArg<Y>`, equal batch widths, then the kind's own bounds.
pub(super) fn activity_bounds(
    p: &TokenStream,
    x: &Type,
    y: &Type,
    dst: TokenStream,
    src: TokenStream,
    own: TokenStream,
) -> TokenStream {
    quote! {
        __Dst: #p::#dst<#x>,
        __Src: #p::#src<#y>,
        <__Dst as #p::Activity>::Width: #p::SameWidth<<__Src as #p::Activity>::Width>,
        #own
    }
}

/// The bounds that make a slice copy's buffers usable: `ShadowMemory` for opaque buffer types,
/// `Differentiable` for elements the macro could not name, and equal elements (unless the macro
/// could compare them itself, or the two types are one).
pub(super) fn copy_bounds<'a>(p: &TokenStream, dst: &'a Type, src: &'a Type) -> TokenStream {
    let mut out = TokenStream::new();
    let same =
        |a: &Type, b: &Type| a.to_token_stream().to_string() == b.to_token_stream().to_string();
    let types: &[&Type] = if same(dst, src) { &[dst] } else { &[dst, src] };
    // A CUDA array's element is its type argument; in a rule on an array every opaque buffer's
    // bound says it: a bare `ShadowMemory` bound would hide the impls' `Elem` from the solver.
    let array_elem = |t: &'a Type| is_array_type(t).then(|| element_of(t)).flatten();
    let shared = array_elem(dst).or_else(|| array_elem(src));
    for x in types {
        match (host_container_elem(x), shared) {
            (Some(e), _) if known_elem(e) => {}
            (Some(e), _) => out.extend(bound_at(e, &quote!(#p::Differentiable))),
            (None, Some(e)) => out.extend(bound_at(x, &quote!(#p::ShadowMemory<Elem = #e>))),
            (None, None) => out.extend(bound_at(x, &quote!(#p::ShadowMemory))),
        }
    }
    let elem = |t: &'a Type| host_container_elem(t).or_else(|| array_elem(t));
    let (de, se) = (elem(dst), elem(src));
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

/// A collective buffer's bounds: the buffer trait at its type, and `NcclElement` at an element
/// the macro does not know by name.
fn collective_bounds(p: &TokenStream, buffer: &Type, bound: TokenStream) -> TokenStream {
    let mut out = bound_at(buffer, &quote!(#p::#bound));
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

/// The parameter `i` by name, or `0usize` when there is none.
pub(super) fn arg_or_zero(g: &Generator<'_>, i: Option<usize>) -> TokenStream {
    i.map_or_else(
        || quote!(0usize),
        |i| g.rule.params[i].name.to_token_stream(),
    )
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
