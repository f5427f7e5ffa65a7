//! The buffer checks of stage 2: the shape a rule's `dst` and `src` give it (slice or pointer),
//! and the rules of each shape (mutability, memory kinds, lengths and offsets, element types).

use crate::ctxt::Ctxt;
use crate::model::{MEMORY_KINDS, MemKind, Role};
use crate::parse::{Param, Rule};
use crate::plan::{Access, Extent};
use crate::text::one_of;
use crate::types::{
    DIFFERENTIABLE, NOT_DIFFERENTIABLE, USIZE, elem_name, element_of, is_array_type, show,
};
use proc_macro2::TokenStream;
use syn::Type;

/// The element types, as the messages list them.
const ELEMENT_TYPES: &str = "`f32`, `f64`, `f16`, `bf16`, `Complex<f32>` or `Complex<f64>`";

/// On a raw-pointer copy without `#[len]`, the one unmarked `usize` parameter, which the missing
/// count's error names (and no other check reports again).
pub fn len_candidate(rule: &Rule) -> Option<usize> {
    let pointer_copy = rule.kind() == Some(crate::model::Kind::Copy)
        && rule
            .with_role(Role::Dst)
            .first()
            .is_some_and(|&i| matches!(rule.params[i].ty, Type::Ptr(_)));
    if !pointer_copy || !rule.with_role(Role::Len).is_empty() {
        return None;
    }
    let unmarked: Vec<usize> = (0..rule.params.len())
        .filter(|&i| {
            let p = &rule.params[i];
            p.role.is_none() && matches!(&p.ty, Type::Path(t) if t.path.is_ident(USIZE))
        })
        .collect();
    match unmarked.as_slice() {
        [i] => Some(*i),
        _ => None,
    }
}

/// The buffers decide the rule's shape: both references (`&mut X` ← `&Y`) or both raw pointers
/// (`*mut T` ← `*const T`). The rules of each shape are checked by its own function.
/// Returns the access and what the rules take activities of (pointees, or pointer elements).
pub fn check_buffers(
    cx: &Ctxt,
    rule: &Rule,
    dst: usize,
    src: usize,
) -> Option<(Access, Type, Type)> {
    let (d, s) = (&rule.params[dst], &rule.params[src]);
    match (&d.ty, &s.ty) {
        (Type::Reference(dr), Type::Reference(sr)) => {
            Some(check_slice_rule(cx, rule, d, dr, s, sr))
        }
        (Type::Ptr(dp), Type::Ptr(sp)) => check_pointer_rule(cx, rule, d, dp, s, sp),
        (dt, st) => {
            check_by_value(cx, d, Role::Dst);
            check_by_value(cx, s, Role::Src);
            let is_buf = |t: &Type| matches!(t, Type::Reference(_) | Type::Ptr(_));
            let ptr_next_to_array = match (dt, st) {
                (Type::Ptr(_), t) if is_array_type(t) => Some((d, "#[src]", "#[dst]")),
                (t, Type::Ptr(_)) if is_array_type(t) => Some((s, "#[dst]", "#[src]")),
                _ => None,
            };
            if let Some((p, array, ptr)) = ptr_next_to_array {
                let Type::Ptr(pt) = &p.ty else { return None };
                cx.error_spanned_by(
                    &p.ty,
                    format!(
                        "`{array}` is a CUDA array (a reference), so `{ptr}` must be a reference too: for raw linear memory take `&{m}RawShadow<{e}>` (`rules_runtime::memory::raw::RawShadow`, made from the pointer, its memory kind and its length)",
                        m = if ptr == "#[dst]" { "mut " } else { "" },
                        e = show(&pt.elem),
                    ),
                );
            } else if is_buf(dt) && is_buf(st) {
                let (want, write) = if let Type::Ptr(p) = dt {
                    ("a raw pointer", format!("*const {}", show(&p.elem)))
                } else {
                    ("a reference", format!("&{}", show(element_target(st))))
                };
                cx.error_spanned_by(
                    st,
                    format!(
                        "`#[dst]` is {want}, so `#[src]` must be one too: write `{write}`; a copy rule's buffers are both references or both raw pointers"
                    ),
                );
            }
            None
        }
    }
}

fn element_target(ty: &Type) -> &Type {
    match ty {
        Type::Ptr(p) => &p.elem,
        Type::Reference(r) => &r.elem,
        other => other,
    }
}

/// A buffer taken by value is moved into the primal: its shadow cannot be written back, and the
/// caller cannot read the result. Buffers are references or raw pointers.
pub fn check_by_value(cx: &Ctxt, p: &Param, wanted: Role) {
    if matches!(p.ty, Type::Reference(_) | Type::Ptr(_)) {
        return;
    }
    let write = match wanted {
        Role::Dst => format!("&mut {}", show(&p.ty)),
        _ => format!("&{}", show(&p.ty)),
    };
    cx.error_spanned_by(
        &p.ty,
        format!(
            "the {} must be a reference or a raw pointer: write `{write}`; a buffer taken by value cannot receive its derivative",
            wanted.noun()
        ),
    );
}

/// A slice-shaped rule (`&mut X` ← `&Y`): the destination writable, the source shared, no
/// pointer-only roles or memory kinds (the buffer types say where they live), elements that
/// carry a derivative and agree.
fn check_slice_rule(
    cx: &Ctxt,
    rule: &Rule,
    d: &Param,
    dr: &syn::TypeReference,
    s: &Param,
    sr: &syn::TypeReference,
) -> (Access, Type, Type) {
    if dr.mutability.is_none() {
        cx.error_spanned_by(
            &d.ty,
            format!(
                "the destination must be mutable: write `&mut {}`",
                show(&dr.elem)
            ),
        );
    }
    if sr.mutability.is_some() {
        cx.error_spanned_by(
            &s.ty,
            format!(
                "the source is only read: take it by shared reference, `&{}`",
                show(&sr.elem)
            ),
        );
    }
    for p in &rule.params {
        if let Some(r) = &p.role
            && matches!(r.role, Role::Len | Role::DstOffset | Role::SrcOffset)
        {
            cx.error_spanned_by(
                &r.attr,
                format!(
                    "`{}` is for raw-pointer copies; a slice-shaped copy's buffers carry their own length: remove it, and slice the buffers at the call instead",
                    r.role.attr()
                ),
            );
        }
    }
    for (name, kind) in [("dst", &rule.args.dst_kind), ("src", &rule.args.src_kind)] {
        if let Some((_, at)) = kind {
            cx.error_spanned_by(
                at,
                format!(
                    "`{name} = ...` declares where a raw pointer points, but `#[{name}]` is a reference, whose type already says where it lives: remove `{name} = ...`"
                ),
            );
        }
    }
    check_elements(cx, element_of(&dr.elem), element_of(&sr.elem));
    (Access::Slice, (*dr.elem).clone(), (*sr.elem).clone())
}

/// A pointer-shaped rule (`*mut T` ← `*const T`): mutability as for slices, the memory kinds
/// declared, a `usize` length, elements that carry a derivative and agree.
fn check_pointer_rule(
    cx: &Ctxt,
    rule: &Rule,
    d: &Param,
    dp: &syn::TypePtr,
    s: &Param,
    sp: &syn::TypePtr,
) -> Option<(Access, Type, Type)> {
    if matches!(dp.mutability, syn::PointerMutability::Const(_)) {
        cx.error_spanned_by(
            &d.ty,
            format!(
                "the destination must be mutable: write `*mut {}`",
                show(&dp.elem)
            ),
        );
    }
    if matches!(sp.mutability, syn::PointerMutability::Mut(_)) {
        cx.error_spanned_by(
            &s.ty,
            format!(
                "the source is only read: take it as `*const {}`",
                show(&sp.elem)
            ),
        );
    }
    let dst_kind = check_declared_kind(cx, rule.args.dst_kind.as_ref(), d, "dst");
    let src_kind = check_declared_kind(cx, rule.args.src_kind.as_ref(), s, "src");
    check_elements(cx, Some(&dp.elem), Some(&sp.elem));
    let len = check_extent(cx, rule, Role::Len);
    let dst_offset = check_extent(cx, rule, Role::DstOffset);
    let src_offset = check_extent(cx, rule, Role::SrcOffset);
    // A region rule's extent is its rows (checked with the kind's other roles).
    let region = rule.kind().is_some_and(crate::model::Kind::is_region);
    if len.is_none() && !region {
        match len_candidate(rule) {
            Some(i) => cx.error_spanned_by(
                &rule.params[i].tokens,
                format!(
                    "a raw-pointer copy needs its element count: if `{n}` is the count, write `#[len] {n}: usize`",
                    n = rule.params[i].name
                ),
            ),
            None => cx.error_spanned_by(
                &rule.func.sig.ident,
                "a raw-pointer copy needs its element count: add a `usize` parameter marked `#[len]`, e.g. `#[len] n: usize`",
            ),
        }
    }
    let extent = Extent {
        dst_kind: dst_kind?,
        src_kind: src_kind?,
        len,
        dst_offset,
        src_offset,
    };
    Some((
        Access::Pointer(extent),
        (*dp.elem).clone(),
        (*sp.elem).clone(),
    ))
}

/// A raw pointer cannot say whether it points at host or device memory, so the attribute must.
fn check_declared_kind(
    cx: &Ctxt,
    kind: Option<&(Option<MemKind>, TokenStream)>,
    p: &Param,
    name: &str,
) -> Option<MemKind> {
    if let Some((kind, _)) = kind {
        return *kind; // `None`: misspelled, already reported
    }
    cx.error_spanned_by(
        &p.ty,
        format!(
            "a raw pointer cannot say where it points: declare its memory kind in the attribute, e.g. `#[derivative_rule(copy, {name} = host)]` ({})",
            one_of(MEMORY_KINDS)
        ),
    );
    None
}

/// The destination of a rule without a source (`memset`, `fill`): a mutable reference or a
/// `*mut T` with its memory kind declared, holding a differentiable element; no `src = ...`.
/// Returns the access and what the rules take activities of.
pub fn check_dst_only(cx: &Ctxt, rule: &Rule, dst: usize) -> Option<(Access, Type)> {
    let d = &rule.params[dst];
    if let Some((_, at)) = &rule.args.src_kind {
        cx.error_spanned_by(
            at,
            format!(
                "{} has no source: remove `src = ...` (the destination's memory kind is `dst = ...`)",
                rule.kind_noun()
            ),
        );
    }
    match &d.ty {
        Type::Reference(dr) => {
            if dr.mutability.is_none() {
                cx.error_spanned_by(
                    &d.ty,
                    format!(
                        "the destination must be mutable: write `&mut {}`",
                        show(&dr.elem)
                    ),
                );
            }
            for p in &rule.params {
                if let Some(r) = &p.role
                    && matches!(r.role, Role::Len | Role::DstOffset | Role::SrcOffset)
                {
                    cx.error_spanned_by(
                        &r.attr,
                        format!(
                            "`{}` is for raw-pointer rules; a reference's buffer carries its own length: remove it, and slice the buffer at the call instead",
                            r.role.attr()
                        ),
                    );
                }
            }
            if let Some((_, at)) = &rule.args.dst_kind {
                cx.error_spanned_by(
                    at,
                    "`dst = ...` declares where a raw pointer points, but `#[dst]` is a reference, whose type already says where it lives: remove `dst = ...`",
                );
            }
            check_elements(cx, element_of(&dr.elem), None);
            Some((Access::Slice, (*dr.elem).clone()))
        }
        Type::Ptr(dp) => {
            if matches!(dp.mutability, syn::PointerMutability::Const(_)) {
                cx.error_spanned_by(
                    &d.ty,
                    format!(
                        "the destination must be mutable: write `*mut {}`",
                        show(&dp.elem)
                    ),
                );
            }
            let kind = check_declared_kind(cx, rule.args.dst_kind.as_ref(), d, "dst");
            check_elements(cx, Some(&dp.elem), None);
            let len = check_extent(cx, rule, Role::Len);
            let dst_offset = check_extent(cx, rule, Role::DstOffset);
            for p in &rule.params {
                if let Some(r) = &p.role
                    && r.role == Role::SrcOffset
                {
                    cx.error_spanned_by(
                        &r.attr,
                        format!("{} has no source: remove `#[src_offset]`", rule.kind_noun()),
                    );
                }
            }
            let kind = kind?;
            let extent = Extent {
                dst_kind: kind,
                src_kind: kind,
                len,
                dst_offset,
                src_offset: None,
            };
            Some((Access::Pointer(extent), (*dp.elem).clone()))
        }
        _ => {
            check_by_value(cx, d, Role::Dst);
            None
        }
    }
}

/// Offsets, lengths and region extents count elements, rows or bytes: one of each at most, of
/// type `usize`.
pub fn check_extent(cx: &Ctxt, rule: &Rule, wanted: Role) -> Option<usize> {
    let marked = rule.with_role(wanted);
    let who = if rule.kind().is_some_and(crate::model::Kind::is_region) {
        rule.kind_noun()
    } else {
        "a copy".to_string()
    };
    for &i in marked.iter().skip(1) {
        cx.error_spanned_by(
            rule.params[i].role_tokens(),
            format!(
                "`{}` is given twice: {who} has one {}; keep one",
                wanted.attr(),
                wanted.noun()
            ),
        );
    }
    let i = *marked.first()?;
    let ty = &rule.params[i].ty;
    // An alias (`size_t`) or a path the macro cannot resolve is judged by the compiler: the
    // generated code passes the argument through `extent`, bounded at this type.
    if usize_by_name(ty) == Some(false) {
        cx.error_spanned_by(
            ty,
            format!(
                "`{}` counts {}: its type must be `usize`, not `{}`",
                wanted.attr(),
                match wanted {
                    Role::DstPitch | Role::SrcPitch => "bytes",
                    Role::Height
                    | Role::DstSliceHeight
                    | Role::SrcSliceHeight
                    | Role::DstY
                    | Role::SrcY => "rows",
                    Role::Depth | Role::DstZ | Role::SrcZ => "slices",
                    _ => "elements",
                },
                show(ty)
            ),
        );
    }
    Some(i)
}

/// Whether `ty` is `usize` by its spelling: `Some(true)` for `usize`, `core::primitive::usize`
/// or `std::primitive::usize`; `Some(false)` for another primitive, a reference, a pointer, a
/// tuple or a slice; `None` for a path it cannot resolve (an alias, say).
pub fn usize_by_name(ty: &Type) -> Option<bool> {
    let Type::Path(p) = ty else {
        return Some(false);
    };
    if p.qself.is_some() {
        return None;
    }
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let last = segs.last()?;
    let primitive = matches!(segs.len(), 1)
        || (segs.len() == 3 && (segs[0] == "core" || segs[0] == "std") && segs[1] == "primitive");
    if !primitive {
        return None;
    }
    if last == USIZE {
        Some(true)
    } else if crate::types::NOT_DIFFERENTIABLE.contains(&last.as_str())
        || crate::types::DIFFERENTIABLE.contains(&last.as_str())
    {
        Some(false)
    } else {
        None
    }
}

/// What the macro knows about an element type by its name.
enum Elem {
    /// Differentiable, under this canonical name.
    Known(&'static str),
    /// Certainly not differentiable (already reported).
    Refused(String),
    /// Opaque to the macro (a generic, an alias, a user type): a bound decides.
    Unknown,
}

/// Non-differentiable elements are refused when the rule is written, not halfway through a
/// reverse pass (the seed's gap); and a copy moves elements unchanged, so `dst` and `src` hold the
/// same element type. Elements the macro cannot name are left to `Differentiable` bounds.
pub fn check_elements(cx: &Ctxt, dst: Option<&Type>, src: Option<&Type>) {
    let d = dst.map(|t| classify_elem(cx, t, None));
    let already = match &d {
        Some(Elem::Refused(n)) => Some(n.clone()),
        _ => None,
    };
    let s = src.map(|t| classify_elem(cx, t, already.as_deref()));
    if let (Some(Elem::Known(dn)), Some(Elem::Known(sn)), Some(st)) = (&d, &s, src)
        && dn != sn
    {
        cx.error_spanned_by(
            st,
            format!(
                "element types differ: `#[dst]` holds `{dn}` but `#[src]` holds `{sn}`; a copy cannot convert, so make them the same (convert in a separate step, outside the rule)"
            ),
        );
    }
}

/// Classifies one element type, reporting the ones that are certainly not differentiable (unless
/// the same name was just reported for the other buffer).
fn classify_elem(cx: &Ctxt, elem: &Type, already: Option<&str>) -> Elem {
    let Some(name) = elem_name(elem) else {
        return Elem::Unknown;
    };
    let canonical = name.as_str();
    if let Some(k) = DIFFERENTIABLE.iter().find(|k| **k == canonical) {
        return Elem::Known(k);
    }
    let refused = NOT_DIFFERENTIABLE.contains(&canonical) || canonical.starts_with("Complex<");
    if !refused {
        return Elem::Unknown;
    }
    if already != Some(canonical) {
        let advice = if canonical.starts_with("Complex<") {
            "complex elements must be `Complex<f32>` or `Complex<f64>`".to_string()
        } else {
            format!(
                "derivative rules need {ELEMENT_TYPES}; integers, booleans and text carry no derivative, so copy them with a plain function, without `#[derivative_rule]`"
            )
        };
        cx.error_spanned_by(
            elem,
            format!("`{canonical}` is not a differentiable element type: {advice}"),
        );
    }
    Elem::Refused(canonical.to_string())
}
