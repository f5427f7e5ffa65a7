//! The bodies of region rules (`memset`, `fill`, `copy2d`, `copy3d`, and any rule with
//! `restore`): the boxes the call names, built from the rule's own parameters, and the calls
//! into the runtime's region bodies. Two-buffer rules (pitched copies, a copy with `restore`, a
//! fill from a one-element buffer) share one family of bodies; memset and fill by value another.

use super::bodies::{activity_bounds, arg_or_zero, copy_bounds, memory_kind};
use super::tokens::{bound_at, first_span, respan};
use super::{Bodies, Generator};
use crate::model::Kind;
use crate::plan::Access;
use crate::types::{host_container_elem, known_elem};
use proc_macro2::TokenStream;
use quote::quote;
use syn::Type;

/// The bodies of `g`'s region rule; `x` is the destination's activity type, `y` the source's.
pub fn bodies(
    g: &Generator<'_>,
    order: &TokenStream,
    primal: &TokenStream,
    x: &Type,
    y: Option<&Type>,
) -> Bodies {
    let p = &g.p;
    let tape = &g.tape;
    let name = |i: usize| &g.rule.params[i].name;
    let [dst, src] = g.plan.buffer_params();
    let d = dst.map(name);
    let s = src.map(name);
    let restore = g.plan.restore;
    let kind = g.plan.kind;
    match &g.plan.access {
        Access::Slice => {
            let elem = match host_container_elem(x) {
                Some(e) => quote!(#e),
                None => quote!(<#x as #p::ShadowRead>::Elem),
            };
            let tape_ty = quote!(#p::RegionTape<#elem>);
            let boxes = slice_boxes(g);
            match (y, &g.plan.value) {
                (Some(y), _) => Bodies {
                    bounds: activity_bounds(
                        p,
                        x,
                        y,
                        quote!(DstArg),
                        quote!(SrcArg),
                        copy_bounds(p, x, y),
                    ),
                    forward: quote!(#p::region_forward(#order, #boxes, #d, #s, #primal)),
                    augmented: quote!(
                        #p::region_augmented_primal(#order, #boxes, #restore, #d, #s, #primal)
                    ),
                    reverse: quote!(#p::region_reverse(#order, #boxes, #tape, #d, #s)),
                    tape: Some(tape_ty),
                    ..Bodies::default()
                },
                (None, Some(value)) => {
                    let vt = &value.ty;
                    let mut bounds = quote!(__Dst: #p::DstArg<#x>,);
                    bounds.extend(copy_bounds(p, x, x));
                    // The value is the destination's element, said at the value's type.
                    bounds.extend(quote!(#x));
                    bounds.extend(respan(
                        quote!(: #p::ShadowRead<Elem = #vt>,),
                        first_span(vt),
                    ));
                    value_bodies(g, order, primal, bounds, vt, tape_ty, &boxes)
                }
                (None, None) => {
                    let mut bounds = quote!(__Dst: #p::DstArg<#x>,);
                    bounds.extend(copy_bounds(p, x, x));
                    Bodies {
                        bounds,
                        forward: quote!(#p::memset_forward(#order, #boxes, #d, #primal)),
                        augmented: quote!(
                            #p::memset_augmented_primal(#order, #boxes, #restore, #d, #primal)
                        ),
                        reverse: quote!(#p::memset_reverse(#order, #boxes, #tape, #d)),
                        tape: Some(tape_ty),
                        ..Bodies::default()
                    }
                }
            }
        }
        Access::Pointer(e) => {
            let t = x;
            let elem = if known_elem(t) {
                TokenStream::new()
            } else {
                bound_at(t, &quote!(#p::Differentiable))
            };
            let tape_ty = quote!(#p::RegionTape<#t>);
            let (dk, sk) = (memory_kind(p, e.dst_kind), memory_kind(p, e.src_kind));
            let dbox = dst_box(g, t, arg_or_zero(g, e.dst_offset), e.len);
            let sbox = match kind.is_pitched() || y.is_some() {
                true => {
                    let b = src_box(g, t, arg_or_zero(g, e.src_offset), e.len);
                    quote!(::core::option::Option::Some(#b))
                }
                false => quote!(::core::option::Option::None),
            };
            let shape = quote! {
                #p::RawRegion { dst_kind: #dk, src_kind: #sk, dst: #dbox, src: #sbox }
            };
            match (y, &g.plan.value) {
                (Some(_), _) => Bodies {
                    bounds: activity_bounds(p, t, t, quote!(DstPtr), quote!(SrcPtr), elem),
                    forward: quote!(unsafe {
                        #p::ptr_region_forward(#order, #shape, #d, #s, #primal)
                    }),
                    augmented: quote!(unsafe {
                        #p::ptr_region_augmented_primal(#order, #shape, #restore, #d, #s, #primal)
                    }),
                    reverse: quote!(unsafe {
                        #p::ptr_region_reverse(#order, #shape, #tape, #d, #s)
                    }),
                    tape: Some(tape_ty),
                    ..Bodies::default()
                },
                (None, Some(value)) => {
                    let mut bounds = quote!(__Dst: #p::DstPtr<#t>,);
                    bounds.extend(elem);
                    let b = value_bodies(g, order, primal, bounds, &value.ty, tape_ty, &shape);
                    let unsafe_body = |body: TokenStream| quote!(unsafe { #body });
                    Bodies {
                        forward: unsafe_body(b.forward),
                        augmented: unsafe_body(b.augmented),
                        reverse: unsafe_body(b.reverse),
                        ..b
                    }
                }
                (None, None) => {
                    let mut bounds = quote!(__Dst: #p::DstPtr<#t>,);
                    bounds.extend(elem);
                    Bodies {
                        bounds,
                        forward: quote!(unsafe {
                            #p::ptr_memset_forward(#order, #shape, #d, #primal)
                        }),
                        augmented: quote!(unsafe {
                            #p::ptr_memset_augmented_primal(#order, #shape, #restore, #d, #primal)
                        }),
                        reverse: quote!(unsafe {
                            #p::ptr_memset_reverse(#order, #shape, #tape, #d)
                        }),
                        tape: Some(tape_ty),
                        ..Bodies::default()
                    }
                }
            }
        }
    }
}

/// A fill by value: the value's activity differs by mode (`Const`/`Dual` forward,
/// `Const`/`Active` reverse), and the reverse returns its derivative per lane.
fn value_bodies(
    g: &Generator<'_>,
    order: &TokenStream,
    primal: &TokenStream,
    bounds: TokenStream,
    vt: &Type,
    tape_ty: TokenStream,
    shape: &TokenStream,
) -> Bodies {
    let p = &g.p;
    let tape = &g.tape;
    let name = |i: usize| &g.rule.params[i].name;
    let d = g.plan.dst.as_ref().map(|b| name(b.param));
    let v = g.plan.value.as_ref().map(|b| name(b.param));
    let restore = g.plan.restore;
    let (fwd, aug, rev) = match g.plan.access {
        Access::Slice => (
            quote!(fill_forward),
            quote!(fill_augmented_primal),
            quote!(fill_reverse),
        ),
        Access::Pointer(_) => (
            quote!(ptr_fill_forward),
            quote!(ptr_fill_augmented_primal),
            quote!(ptr_fill_reverse),
        ),
    };
    Bodies {
        bounds,
        forward_bounds: quote! {
            __Val: #p::ForwardValue<#vt>,
            <__Dst as #p::Activity>::Width: #p::SameWidth<<__Val as #p::Activity>::Width>,
        },
        reverse_bounds: quote!(__Val: #p::ReverseValue<#vt>,),
        forward: quote!(#p::#fwd(#order, #shape, #d, #v, #primal)),
        augmented: quote!(#p::#aug(#order, #shape, #restore, #d, #v, #primal)),
        reverse: quote!(#p::#rev(#order, #shape, #tape, #d, #v)),
        tape: Some(tape_ty),
        reverse_output: Some(
            quote!(<__Val as #p::ReverseValue<#vt>>::Gradient<<__Dst as #p::Activity>::Width>),
        ),
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
