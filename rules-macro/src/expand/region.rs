//! The trait parts of region rules (`memset`, `fill`, `copy2d`, `copy3d`, and any rule with
//! `restore`): the boxes the call names, built from the rule's own arguments, and which of the
//! runtime's region traits the rule implements. Two-buffer rules (pitched copies, a copy with
//! `restore`, a fill from a one-element buffer) share one trait; memset and fill by value each
//! have their own.

use super::bodies::{arg_or_zero, copy_bounds, memory_kind};
use super::tokens::{bound_at, first_span, respan};
use super::{Generator, Parts};
use crate::model::Kind;
use crate::plan::Access;
use crate::types::{host_container_elem, known_elem};
use proc_macro2::TokenStream;
use quote::quote;
use syn::Type;

/// The trait parts of `g`'s region rule; `x` is the destination's type, `y` the source's.
pub fn parts(g: &Generator<'_>, order: &TokenStream, x: &Type, y: Option<&Type>) -> Parts {
    let p = &g.p;
    let s = g.order_lifetime();
    let restore = g.plan.restore;
    let host = quote!(#p::On::Host);
    match &g.plan.access {
        Access::Slice => {
            let boxes = slice_boxes(g);
            let plan = Some((
                quote!((#p::On<#s>, #p::Boxes, bool)),
                quote!((#order, #boxes, #restore)),
            ));
            match (y, &g.plan.value) {
                (Some(y), _) => Parts {
                    trait_name: quote!(RegionRule),
                    trait_text: "RegionRule",
                    on_only: false,
                    args: quote!(#x, #y),
                    plan,
                    default_plan: host,
                    inputs: quote!(__d: &mut #x, __s: &#y),
                    raw: false,
                    bounds: copy_bounds(p, x, y),
                },
                (None, Some(value)) => {
                    let vt = &value.ty;
                    let mut bounds = copy_bounds(p, x, x);
                    if host_container_elem(x).is_none() {
                        // The value is the destination's element, said at the value's type.
                        bounds.extend(quote!(#x));
                        bounds.extend(respan(
                            quote!(: #p::ShadowRead<Elem = #vt>,),
                            first_span(vt),
                        ));
                    }
                    Parts {
                        trait_name: quote!(FillRule),
                        trait_text: "FillRule",
                        on_only: false,
                        args: quote!(#x),
                        plan,
                        default_plan: host,
                        inputs: quote!(__d: &mut #x, __v: #vt),
                        raw: false,
                        bounds,
                    }
                }
                (None, None) => Parts {
                    trait_name: quote!(MemsetRule),
                    trait_text: "MemsetRule",
                    on_only: false,
                    args: quote!(#x),
                    plan,
                    default_plan: host,
                    inputs: quote!(__d: &mut #x),
                    raw: false,
                    bounds: copy_bounds(p, x, x),
                },
            }
        }
        Access::Pointer(e) => {
            let t = x;
            let bounds = if known_elem(t) {
                TokenStream::new()
            } else {
                bound_at(t, &quote!(#p::Differentiable))
            };
            let (dk, sk) = (memory_kind(p, e.dst_kind), memory_kind(p, e.src_kind));
            let dbox = dst_box(g, t, arg_or_zero(g, e.dst_offset), e.len);
            let sbox = match g.plan.kind.is_pitched() || y.is_some() {
                true => {
                    let b = src_box(g, t, arg_or_zero(g, e.src_offset), e.len);
                    quote!(::core::option::Option::Some(#b))
                }
                false => quote!(::core::option::Option::None),
            };
            let shape = quote! {
                #p::RawRegion { dst_kind: #dk, src_kind: #sk, dst: #dbox, src: #sbox }
            };
            let plan = Some((
                quote!((#p::On<#s>, #p::RawRegion, bool)),
                quote!((#order, #shape, #restore)),
            ));
            let (trait_text, inputs) = match (y, &g.plan.value) {
                (Some(_), _) => ("RawRegionRule", quote!(__d: *mut #t, __s: *const #t)),
                (None, Some(v)) => {
                    let vt = &v.ty;
                    ("RawFillRule", quote!(__d: *mut #t, __v: #vt))
                }
                (None, None) => ("RawMemsetRule", quote!(__d: *mut #t)),
            };
            let trait_name = syn::Ident::new(trait_text, proc_macro2::Span::call_site());
            Parts {
                trait_name: quote!(#trait_name),
                trait_text,
                on_only: false,
                args: quote!(#t),
                plan,
                default_plan: host,
                inputs,
                raw: true,
                bounds,
            }
        }
    }
}

/// The `Boxes` of a slice rule: offsets are 0 (a slice is cut at the call); a CUDA array's box
/// is its shape and its origin, laid out by the runtime in the array's own layout.
fn slice_boxes(g: &Generator<'_>) -> TokenStream {
    let p = &g.p;
    let zero = quote!(0usize);
    let r = &g.plan.region;
    let rows = r.width.is_some();
    let side = |dst: bool| {
        let array = if dst { r.dst_array } else { r.src_array };
        if array {
            array_shape(g)
        } else {
            pitched(g, &zero, dst)
        }
    };
    let boxes = match g.plan.kind {
        Kind::Copy2d | Kind::Copy3d => {
            let (d, s) = (side(true), side(false));
            quote!(#p::Boxes::copy(#d, #s))
        }
        Kind::Fill if g.plan.src.is_some() => {
            if rows {
                let d = side(true);
                quote!(#p::Boxes::from_value(::core::option::Option::Some(#d)))
            } else {
                quote!(#p::Boxes::from_value(::core::option::Option::None))
            }
        }
        Kind::Memset | Kind::Fill if rows => {
            let d = side(true);
            quote!(#p::Boxes::dst(#d))
        }
        _ => return quote!(#p::Boxes::WHOLE),
    };
    let at = |o: &[Option<usize>; 3]| {
        let [x, y, z] = o.map(|i| arg_or_zero(g, i));
        quote!(#x, #y, #z)
    };
    let mut boxes = boxes;
    if r.dst_array {
        let o = at(&r.dst_origin);
        boxes = quote!(#boxes.dst_in_array(#o));
    }
    if r.src_array && g.plan.kind.is_pitched() {
        let o = at(&r.src_origin);
        boxes = quote!(#boxes.src_in_array(#o));
    }
    boxes
}

/// The shape of a box in a CUDA array (its offset and pitches are the array's, filled in by the
/// runtime): `#[width]` × `#[height]` × `#[depth]` (1 for a 2-D box).
fn array_shape(g: &Generator<'_>) -> TokenStream {
    let p = &g.p;
    let r = &g.plan.region;
    let (w, h) = (arg_or_zero(g, r.width), arg_or_zero(g, r.height));
    let d = match r.depth {
        Some(_) => arg_or_zero(g, r.depth),
        None => quote!(1usize),
    };
    quote!(#p::Pitched::slices(0usize, #w, #h, #d, 0usize, 0usize))
}

/// The destination's box of a pointer rule: rows, or a run of `#[len]` elements.
fn dst_box(g: &Generator<'_>, t: &Type, offset: TokenStream, len: Option<usize>) -> TokenStream {
    if g.plan.region.width.is_some() {
        return pitched(g, &offset, true);
    }
    let p = &g.p;
    let n = arg_or_zero(g, len);
    quote!(#p::Pitched::linear::<#t>(#offset, #n))
}

/// The source's box of a pointer rule, as [`dst_box`].
fn src_box(g: &Generator<'_>, t: &Type, offset: TokenStream, len: Option<usize>) -> TokenStream {
    if g.plan.region.width.is_some() {
        return pitched(g, &offset, false);
    }
    let p = &g.p;
    let n = arg_or_zero(g, len);
    quote!(#p::Pitched::linear::<#t>(#offset, #n))
}

/// `Pitched::rows(offset, width, height, pitch)`, or `Pitched::slices(...)` for a 3-D copy, with
/// the destination's pitch and slice height (`dst`) or the source's.
fn pitched(g: &Generator<'_>, offset: &TokenStream, dst: bool) -> TokenStream {
    let p = &g.p;
    let r = &g.plan.region;
    let arg = |i: Option<usize>| arg_or_zero(g, i);
    let (w, h) = (arg(r.width), arg(r.height));
    let (pitch, slice) = if dst {
        (arg(r.dst_pitch), arg(r.dst_slice_height))
    } else {
        (arg(r.src_pitch), arg(r.src_slice_height))
    };
    if g.plan.kind == Kind::Copy3d {
        let depth = arg(r.depth);
        quote!(#p::Pitched::slices(#offset, #w, #h, #depth, #pitch, #slice))
    } else {
        quote!(#p::Pitched::rows(#offset, #w, #h, #pitch))
    }
}
