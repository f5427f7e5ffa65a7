//! The checks of region rules: `memset` and `fill` (a destination box, and for a fill its value),
//! `copy2d` and `copy3d` (two boxes of one shape, each side with its own pitch). The buffers'
//! own rules are in [`super::buffers`]; the stream's and the collective roles' in [`super::copy`].

use super::array::{array_sides, check_array_stream, check_origins};
use super::buffers::{check_buffers, check_dst_only, check_extent};
use super::check_one_role;
use super::copy::{check_collective_roles_on_copy, check_device_pointer_stream};
use super::params::{check_params, check_stream};
use crate::ctxt::Ctxt;
use crate::model::{COPY3D, FILL, Kind, Role};
use crate::parse::Rule;
use crate::plan::{Access, Buffer, Order, Plan, Region};
use crate::types::{
    DIFFERENTIABLE, ELEMENT_VALUE, INTEGER, NOT_DIFFERENTIABLE, ParamClass, classify, elem_name,
    element_of, show,
};
use syn::Type;

/// Runs the checks of a region rule; returns its plan when its own checks passed.
pub fn check_region(cx: &Ctxt, rule: &Rule, kind: Kind) -> Option<Plan> {
    let dst = check_one_role(cx, rule, Role::Dst);
    let src = if kind.is_pitched() {
        check_one_role(cx, rule, Role::Src)
    } else {
        check_no_source(cx, rule, kind);
        None
    };
    let stream = check_stream(cx, rule);
    check_params(cx, rule, kind, stream);
    check_collective_roles_on_copy(cx, rule);
    let region = check_extents(cx, rule, kind);
    check_array_stream(cx, rule, &region, stream);
    let value = check_value(cx, rule, kind);
    let (access, dst_ty, src_ty) = match (kind.is_pitched(), dst, src) {
        (true, Some(d), Some(s)) => {
            let (access, x, y) = check_buffers(cx, rule, d, s)?;
            (access, x, Some(y))
        }
        (false, Some(d), _) => {
            let (access, x) = check_dst_only(cx, rule, d)?;
            (access, x, None)
        }
        _ => return None,
    };
    if let Access::Pointer(e) = &access {
        check_device_pointer_stream(cx, rule, e.dst_kind, e.src_kind, stream);
        check_pointer_extent(cx, rule, kind, e.len, &region);
    }
    let (value, src) = match (value, src_ty) {
        (Some(v), _) => check_value_type(cx, rule, &access, &dst_ty, v)?,
        (None, Some(y)) => (None, Some(Buffer { param: src?, ty: y })),
        (None, None) => (None, None),
    };
    if kind == Kind::Fill && value.is_none() && src.is_none() {
        return None; // the missing value is reported
    }
    let unsafety = rule.is_unsafe() || matches!(access, Access::Pointer(_));
    Some(Plan {
        kind,
        dst: Some(Buffer {
            param: dst?,
            ty: dst_ty,
        }),
        src,
        access,
        order: Order::Stream(stream),
        unsafety,
        value,
        region,
        restore: rule.args.restore.is_some(),
    })
}

/// A memset or a fill writes its destination from nothing but a value: a `#[src]` would be
/// passed through silently, and the user would believe its derivative is taken.
fn check_no_source(cx: &Ctxt, rule: &Rule, kind: Kind) {
    for i in rule.with_role(Role::Src) {
        let advice = if kind == Kind::Fill {
            "a value held in a buffer is `#[value] v: &CudaSlice<T>`"
        } else {
            "to copy between boxes, make the rule `copy2d`"
        };
        cx.error_spanned_by(
            rule.params[i].role_tokens(),
            format!("{} has no source: remove `#[src]` ({advice})", kind.noun()),
        );
    }
}

/// Each kind's box roles: a pitched copy needs its width, height and both pitches (and for 3-D
/// the depth and both slice heights); a memset or a fill takes rows of its destination (width,
/// height and pitch together) or none (a run, or the whole buffer). A CUDA array's side has no
/// pitch or slice height but an origin ([`check_origins`]). A role the kind cannot use is refused
/// rather than passed through: the box would silently be another one.
fn check_extents(cx: &Ctxt, rule: &Rule, kind: Kind) -> Region {
    let mut r = Region::default();
    for &role in Role::EXTENTS {
        let at = check_extent(cx, rule, role);
        let slot = match role {
            Role::Width => &mut r.width,
            Role::Height => &mut r.height,
            Role::Depth => &mut r.depth,
            Role::DstPitch => &mut r.dst_pitch,
            Role::SrcPitch => &mut r.src_pitch,
            Role::DstSliceHeight => &mut r.dst_slice_height,
            _ => &mut r.src_slice_height,
        };
        *slot = at;
    }
    check_origins(cx, rule, kind, &mut r);
    let (da, sa) = array_sides(rule);
    let three_d = [Role::Depth, Role::DstSliceHeight, Role::SrcSliceHeight];
    if kind != Kind::Copy3d {
        for role in three_d {
            refuse(
                cx,
                rule,
                role,
                &format!(
                    "`{}` is for 3-D copies: make the rule `#[derivative_rule({COPY3D})]`, or remove it ({} works on rows)",
                    role.attr(),
                    kind.noun()
                ),
            );
        }
    }
    if kind.is_pitched() {
        refuse(
            cx,
            rule,
            Role::Len,
            &format!(
                "a pitched copy's extent is `#[width]` elements by `#[height]` rows{}: remove `#[len]`",
                if kind == Kind::Copy3d {
                    " by `#[depth]` slices"
                } else {
                    ""
                }
            ),
        );
        let mut needed = vec![Role::Width, Role::Height];
        needed.extend((!da).then_some(Role::DstPitch));
        needed.extend((!sa).then_some(Role::SrcPitch));
        if kind == Kind::Copy3d {
            needed.push(Role::Depth);
            needed.extend((!da).then_some(Role::DstSliceHeight));
            needed.extend((!sa).then_some(Role::SrcSliceHeight));
        }
        for role in needed {
            require(cx, rule, kind, role, da);
        }
    } else {
        for role in [Role::SrcPitch, Role::SrcSliceHeight] {
            refuse(
                cx,
                rule,
                role,
                &format!(
                    "{} has no source, so no `{}`: its rows are {}",
                    kind.noun(),
                    role.attr(),
                    if da {
                        "placed in the array by `#[dst_x]` and `#[dst_y]`"
                    } else {
                        "`#[dst_pitch]` bytes apart"
                    }
                ),
            );
        }
        // An array's rows are placed by their origin, not a pitch ([`check_origins`]).
        let rows: &[Role] = if da {
            &[Role::Width, Role::Height, Role::DstX, Role::DstY]
        } else {
            &[Role::Width, Role::Height, Role::DstPitch]
        };
        if rows.iter().any(|&role| !rule.with_role(role).is_empty()) {
            for &role in rows.iter().filter(|r| r.origin().is_none()) {
                require(cx, rule, kind, role, da);
            }
        }
    }
    r
}

/// A role the kind has no use for, reported at each of its marks.
fn refuse(cx: &Ctxt, rule: &Rule, role: Role, msg: &str) {
    for i in rule.with_role(role) {
        cx.error_spanned_by(rule.params[i].role_tokens(), msg);
    }
}

/// A role the kind needs, reported at the function's name when no parameter has it. `dst_array`:
/// the destination is a CUDA array, whose rows are placed by an origin rather than a pitch.
fn require(cx: &Ctxt, rule: &Rule, kind: Kind, role: Role, dst_array: bool) {
    if rule.with_role(role).is_empty() && !rule.dropped_roles.contains(&role) {
        let example = match role {
            Role::Width => "#[width] width: usize",
            Role::Height => "#[height] height: usize",
            Role::Depth => "#[depth] depth: usize",
            Role::DstPitch => "#[dst_pitch] dst_pitch: usize",
            Role::SrcPitch => "#[src_pitch] src_pitch: usize",
            Role::DstSliceHeight => "#[dst_slice_height] dst_rows: usize",
            _ => "#[src_slice_height] src_rows: usize",
        };
        let why = if kind.is_pitched() {
            ""
        } else if dst_array {
            " (rows of a memset or fill into a CUDA array take `#[width]` and `#[height]` together, placed by `#[dst_x]` and `#[dst_y]`)"
        } else {
            " (rows of a memset or fill take `#[width]`, `#[height]` and `#[dst_pitch]` together)"
        };
        cx.error_spanned_by(
            &rule.func.sig.ident,
            format!(
                "{} needs its {}{why}: add a parameter marked `{}`, e.g. `{example}`",
                kind.noun(),
                role.noun(),
                role.attr(),
            ),
        );
    }
}

/// A raw pointer says nothing of how far its box reaches: a memset or a fill through a pointer
/// gives a run (`#[len]`) or rows (`#[width]`, `#[height]`, `#[dst_pitch]`), not both.
fn check_pointer_extent(cx: &Ctxt, rule: &Rule, kind: Kind, len: Option<usize>, r: &Region) {
    if kind.is_pitched() {
        return;
    }
    match (len, r.width) {
        (None, None) => cx.error_spanned_by(
            &rule.func.sig.ident,
            format!(
                "a raw-pointer {} needs its extent: `#[len] n: usize` for a run of elements, or `#[width]`, `#[height]` and `#[dst_pitch]` for rows",
                kind.name()
            ),
        ),
        (Some(i), Some(_)) => cx.error_spanned_by(
            rule.params[i].role_tokens(),
            "a box is a run of `#[len]` elements or rows of `#[width]` elements, not both: remove `#[len]`, or the row roles",
        ),
        _ => {}
    }
}

/// A fill needs its value, marked `#[value]`; a memset's value, marked `#[value]` too, is a bit
/// pattern ([`check_memset_pattern`]); no other kind has one.
fn check_value(cx: &Ctxt, rule: &Rule, kind: Kind) -> Option<usize> {
    let marked = rule.with_role(Role::Value);
    if kind == Kind::Memset {
        check_memset_pattern(cx, rule, &marked);
        return None;
    }
    if kind != Kind::Fill {
        refuse(
            cx,
            rule,
            Role::Value,
            &format!(
                "`#[value]` belongs to `{FILL}` rules; {} copies its source: remove it",
                kind.noun()
            ),
        );
        return None;
    }
    for &i in marked.iter().skip(1) {
        cx.error_spanned_by(
            rule.params[i].role_tokens(),
            "`#[value]` is given twice: a fill writes one value; keep one",
        );
    }
    if marked.is_empty() && !rule.dropped_roles.contains(&Role::Value) {
        cx.error_spanned_by(
            &rule.func.sig.ident,
            "a `fill` rule needs its value: mark it `#[value]`, e.g. `#[value] v: f32` (the destination's element type), or `#[value] v: &CudaSlice<f32>` (a one-element device buffer)",
        );
    }
    marked.first().copied()
}

/// A memset's value is a bit pattern with no derivative (Enzyme refuses an active one): marked
/// `#[value]`, it passes through to the primitive unchanged. A value of an element type written
/// over the box is a fill, whose derivative the rule would otherwise drop.
fn check_memset_pattern(cx: &Ctxt, rule: &Rule, marked: &[usize]) {
    for &i in marked.iter().skip(1) {
        cx.error_spanned_by(
            rule.params[i].role_tokens(),
            "`#[value]` is given twice: a memset writes one bit pattern; keep one",
        );
    }
    for &i in marked {
        let p = &rule.params[i];
        match classify(&p.ty) {
            ParamClass::Scalar(INTEGER) if is_plain_integer(&p.ty) => {}
            ParamClass::Scalar(INTEGER) | ParamClass::Scalar(ELEMENT_VALUE) => {
                cx.error_spanned_by(
                    &p.ty,
                    format!(
                        "a memset's value is a bit pattern (`u8`, `u16`, `u32`: `cuMemsetD8/D16/D32`), not `{}`: to write a value of the element type, whose derivative the rule returns, make the rule `#[derivative_rule({FILL})]`",
                        show(&p.ty)
                    ),
                );
            }
            // An alias, a generic, a type of the user's: it may be a value of the element type
            // (`type Real = f32`, the rule's `T`), whose derivative a memset's rule would drop
            // without a word. Only an integer type written as such is a bit pattern.
            _ => cx.error_spanned_by(
                &p.ty,
                format!(
                    "a memset's bit pattern is written as an integer type (`u8`, `u16`, `u32`), so that a value of the element type cannot pass for one: `{}` may be such a value (an alias of `f32`, the element type `T`), whose derivative a memset's rule would drop. Write the integer type, or, to write a value of the element type, make the rule `#[derivative_rule({FILL})]`",
                    show(&p.ty)
                ),
            ),
        }
    }
}

/// Whether `ty` is an integer type by its name alone (`u32`, `core::primitive::u32`), with no
/// container around it.
fn is_plain_integer(ty: &Type) -> bool {
    match ty {
        Type::Paren(p) => is_plain_integer(&p.elem),
        Type::Group(g) => is_plain_integer(&g.elem),
        Type::Path(p) => {
            p.qself.is_none()
                && p.path.segments.last().is_some_and(|s| {
                    s.arguments.is_empty() && classify(ty) == ParamClass::Scalar(INTEGER)
                })
        }
        _ => false,
    }
}

/// The value is the destination's element type (a fill cannot convert), taken by value, or a
/// one-element buffer by shared reference (read by the fill kernel, `Duplicated` like any
/// buffer). Returns the plan's value (by value) or source (in a buffer).
fn check_value_type(
    cx: &Ctxt,
    rule: &Rule,
    access: &Access,
    dst_ty: &Type,
    v: usize,
) -> Option<(Option<Buffer>, Option<Buffer>)> {
    let ty = &rule.params[v].ty;
    let dst_elem = match access {
        Access::Slice => element_of(dst_ty),
        Access::Pointer(_) => Some(dst_ty),
    };
    let (elem, in_buffer) = match ty {
        Type::Reference(r) => {
            if r.mutability.is_some() {
                cx.error_spanned_by(
                    ty,
                    format!(
                        "the value is only read: take it by shared reference, `&{}`",
                        show(&r.elem)
                    ),
                );
            }
            if matches!(access, Access::Pointer(_)) {
                cx.error_spanned_by(
                    ty,
                    "a value held in a buffer goes with a destination taken by reference (`&mut CudaSlice<T>`); with a raw-pointer destination take the value itself, `#[value] v: T`",
                );
                return None;
            }
            if let Some(name) = elem_name(&r.elem)
                && (DIFFERENTIABLE.contains(&name.as_str()) || is_type_param(rule, &name))
            {
                cx.error_spanned_by(
                    ty,
                    format!(
                        "a fill's value is taken by value: write `#[value] v: {name}` (a value held in device memory is a one-element buffer, `#[value] v: &CudaSlice<{name}>`)"
                    ),
                );
                return None;
            }
            (element_of(&r.elem), true)
        }
        Type::Ptr(_) => {
            cx.error_spanned_by(
                ty,
                "a fill's value cannot be a raw pointer: take the value itself (`#[value] v: T`), or a one-element buffer by reference (`#[value] v: &CudaSlice<T>`)",
            );
            return None;
        }
        other => (Some(other), false),
    };
    let (en, dn) = (elem.and_then(elem_name), dst_elem.and_then(elem_name));
    if let (Some(en), Some(e)) = (&en, elem)
        && NOT_DIFFERENTIABLE.contains(&en.as_str())
    {
        cx.error_spanned_by(
            e,
            format!(
                "a fill's value has the destination's element type, not `{en}`: for a bit pattern (`cuMemsetD8/D16/D32`) make the rule `#[derivative_rule(memset)]` (its `#[value]` is the bit pattern)"
            ),
        );
        return None;
    }
    // Two names the macro knows (`f64` for `f32`, a type parameter `V` for `T`) are two types;
    // an alias (`type Real = f32`) is the compiler's to judge, at the impl the macro writes.
    let known = |n: &String| DIFFERENTIABLE.contains(&n.as_str()) || is_type_param(rule, n);
    if let (Some(en), Some(dn), Some(e)) = (&en, &dn, elem)
        && en != dn
        && known(en)
        && known(dn)
    {
        cx.error_spanned_by(
            e,
            format!(
                "the value must have the destination's element type: `#[dst]` holds `{dn}`, so write `{}`; a fill cannot convert",
                if in_buffer {
                    format!("&CudaSlice<{dn}>")
                } else {
                    dn.clone()
                }
            ),
        );
        return None;
    }
    let ty = match ty {
        Type::Reference(r) => (*r.elem).clone(),
        other => other.clone(),
    };
    let buffer = Buffer { param: v, ty };
    Some(if in_buffer {
        (None, Some(buffer))
    } else {
        (Some(buffer), None)
    })
}

/// Whether `name` is one of the rule's own type parameters.
fn is_type_param(rule: &Rule, name: &str) -> bool {
    rule.func
        .sig
        .generics
        .type_params()
        .any(|t| t.ident == name)
}
