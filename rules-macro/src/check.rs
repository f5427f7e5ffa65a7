//! Stage 2: semantic checks. Each `check_*` function enforces one rule of DESIGN §5 and says why;
//! all of them run, so every problem shows in one compile, each at the token at fault. What the
//! macro cannot see (does a type implement `ShadowMemory`?) is left to trait bounds placed at the
//! argument's span by [`crate::expand`].

use crate::errors::Ctxt;
use crate::parse::{MemKind, Param, Role, Rule};
use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{GenericArgument, PathArguments, ReturnType, Type};

/// Element types with a derivative, as they may be spelled.
const DIFFERENTIABLE: &[&str] = &[
    "f32",
    "f64",
    "f16",
    "bf16",
    "Complex32",
    "Complex64",
    "c32",
    "c64",
];
/// Element types without a derivative.
const NOT_DIFFERENTIABLE: &[&str] = &[
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize", "bool",
    "char", "str", "String",
];

/// What the expansion needs, once the checks have passed.
pub struct Checked {
    /// Index of the `#[dst]` parameter.
    pub dst: usize,
    /// Index of the `#[src]` parameter.
    pub src: usize,
    /// Index of the stream parameter, if any.
    pub stream: Option<usize>,
    /// Slice or pointer rule.
    pub shape: Shape,
    /// Whether the generated rules must be `unsafe fn`.
    pub unsafety: bool,
    /// Element types the macro could not classify: the expansion asserts `Differentiable` at them.
    pub unknown_elems: Vec<Type>,
}

/// The two shapes of copy rule.
pub enum Shape {
    /// `dst: &mut X`, `src: &Y`: `X` and `Y` are the pointee types.
    Slice {
        /// The destination's pointee type.
        dst: Type,
        /// The source's pointee type.
        src: Type,
    },
    /// `dst: *mut T`, `src: *const T`, with offsets and a length.
    Pointer {
        /// The element type `T`.
        elem: Type,
        /// Declared kind of the destination.
        dst_kind: MemKind,
        /// Declared kind of the source.
        src_kind: MemKind,
        /// Index of `#[len]`.
        len: usize,
        /// Index of `#[dst_offset]`, if any.
        dst_offset: Option<usize>,
        /// Index of `#[src_offset]`, if any.
        src_offset: Option<usize>,
    },
}

/// Runs every check; returns the plan for expansion when none failed.
pub fn check(cx: &Ctxt, rule: &Rule) -> Option<Checked> {
    check_rule_kind(cx, rule);
    check_signature(cx, rule);
    check_return_type(cx, rule);
    let roles = check_roles(cx, rule);
    let stream = find_stream(cx, rule);
    let shape = roles.and_then(|(dst, src)| check_buffers(cx, rule, dst, src));
    if let Some((
        Shape::Pointer {
            dst_kind, src_kind, ..
        },
        _,
    )) = &shape
    {
        check_device_pointer_stream(cx, rule, *dst_kind, *src_kind, stream);
    }
    if cx.has_errors() {
        return None;
    }
    let ((dst, src), (shape, unknown_elems)) = (roles?, shape?);
    let unsafety = matches!(rule.func.sig.safety, syn::Safety::Unsafe(_))
        || matches!(shape, Shape::Pointer { .. });
    Some(Checked {
        dst,
        src,
        stream,
        shape,
        unsafety,
        unknown_elems,
    })
}

/// A rule needs a kind: it says which semantics (DESIGN §3) the generated rules implement.
fn check_rule_kind(cx: &Ctxt, rule: &Rule) {
    if rule.args.kind.is_none() {
        cx.error_at(
            Span::call_site(),
            "missing rule kind: write `#[derivative_rule(copy)]`",
        );
    }
}

/// The generated rules call the primal synchronously, once per lane: `async fn`, C-variadic
/// functions and methods cannot be called that way.
fn check_signature(cx: &Ctxt, rule: &Rule) {
    let sig = &rule.func.sig;
    if let Some(a) = &sig.asyncness {
        cx.error_spanned_by(
            a,
            "a copy rule's primal must be synchronous: remove `async` (CUDA work is already asynchronous on its stream)",
        );
    }
    if let Some(v) = &sig.variadic {
        cx.error_spanned_by(
            &v.dots,
            "variadic functions cannot have derivative rules: the rule must know every argument; wrap the call in a function with fixed parameters",
        );
    }
    for p in rule.params.iter().filter(|p| p.receiver) {
        let msg = if let Some((role, _)) = p.role {
            format!(
                "`{}` cannot be on `self`: the buffers of a copy rule are ordinary parameters",
                role.attr()
            )
        } else {
            "copy rules are free functions: move this method's body into a function that takes the buffers as parameters".to_string()
        };
        cx.error_at(p.span, msg);
    }
}

/// The generated rules turn the primal's outcome into the runtime's `Result`; anything but `()` or
/// `Result<(), E>` would be silently dropped.
fn check_return_type(cx: &Ctxt, rule: &Rule) {
    let ReturnType::Type(_, ty) = &rule.func.sig.output else {
        return;
    };
    let ok = match &**ty {
        Type::Tuple(t) => t.elems.is_empty(),
        Type::Path(p) => {
            p.qself.is_none()
                && p.path.segments.last().is_some_and(|seg| {
                    seg.ident == "Result"
                        && match &seg.arguments {
                            PathArguments::AngleBracketed(a) => matches!(
                                a.args.first(),
                                Some(GenericArgument::Type(Type::Tuple(t))) if t.elems.is_empty()
                            ),
                            _ => false,
                        }
                })
        }
        _ => false,
    };
    if !ok {
        cx.error_spanned_by(
            ty,
            format!(
                "a copy primitive must return `()` or `Result<(), E>`, not `{}`; a copy has no value to differentiate",
                ty.to_token_stream()
            ),
        );
    }
}

/// Exactly one `#[dst]` and one `#[src]`: a copy rule moves one buffer into one other.
fn check_roles(cx: &Ctxt, rule: &Rule) -> Option<(usize, usize)> {
    let find = |role: Role| -> Option<usize> {
        let found: Vec<usize> = rule
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.role.is_some_and(|(r, _)| r == role))
            .map(|(i, _)| i)
            .collect();
        for &i in found.iter().skip(1) {
            let (_, at) = rule.params[i].role?;
            cx.error_at(
                at,
                format!(
                    "`{}` is given twice: a copy rule has exactly one {}",
                    role.attr(),
                    noun(role)
                ),
            );
        }
        if found.is_empty() && matches!(role, Role::Dst | Role::Src) {
            cx.error_spanned_by(
                &rule.func.sig.ident,
                format!(
                    "no {} parameter: mark the {} with `{}`",
                    role.attr(),
                    noun(role),
                    role.attr()
                ),
            );
        }
        found.first().copied()
    };
    let (dst, src) = (find(Role::Dst), find(Role::Src));
    Some((dst?, src?))
}

fn noun(role: Role) -> &'static str {
    match role {
        Role::Dst => "destination",
        Role::Src => "source",
        Role::Len => "length",
        Role::DstOffset => "destination offset",
        Role::SrcOffset => "source offset",
        Role::Stream => "stream",
    }
}

/// The stream orders the shadow work after the primal copy (DESIGN §4). Named by `#[stream]`, or
/// found by its type (`CudaStream`, `Arc<CudaStream>`, or references to them).
fn find_stream(cx: &Ctxt, rule: &Rule) -> Option<usize> {
    let marked: Vec<usize> = (0..rule.params.len())
        .filter(|&i| rule.params[i].role.is_some_and(|(r, _)| r == Role::Stream))
        .collect();
    for &i in marked.iter().skip(1) {
        if let Some((_, at)) = rule.params[i].role {
            cx.error_at(at, "`#[stream]` is given twice: a copy runs on one stream");
        }
    }
    if let Some(&i) = marked.first() {
        return Some(i);
    }
    let by_type: Vec<usize> = (0..rule.params.len())
        .filter(|&i| rule.params[i].role.is_none() && is_stream_type(&rule.params[i].ty))
        .collect();
    if by_type.len() > 1 {
        cx.error_at(
            rule.params[by_type[1]].span,
            "several parameters are CUDA streams: mark the one the copy runs on with `#[stream]`",
        );
    }
    by_type.first().copied()
}

fn is_stream_type(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => is_stream_type(&r.elem),
        Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            s.ident == "CudaStream"
                || (s.ident == "Arc"
                    && matches!(&s.arguments, PathArguments::AngleBracketed(a)
                        if matches!(a.args.first(), Some(GenericArgument::Type(t)) if is_stream_type(t))))
        }),
        _ => false,
    }
}

/// The buffers decide the rule's shape. Both references (`&mut X` ← `&Y`) or both raw pointers
/// (`*mut T` ← `*const T`); the destination must be writable and the source read-only; element
/// types must be differentiable and equal.
fn check_buffers(cx: &Ctxt, rule: &Rule, dst: usize, src: usize) -> Option<(Shape, Vec<Type>)> {
    let (d, s) = (&rule.params[dst], &rule.params[src]);
    match (&d.ty, &s.ty) {
        (Type::Reference(dr), Type::Reference(sr)) => {
            if dr.mutability.is_none() {
                cx.error_spanned_by(
                    &d.ty,
                    format!(
                        "the destination must be mutable: write `&mut {}`",
                        dr.elem.to_token_stream()
                    ),
                );
            }
            if sr.mutability.is_some() {
                cx.error_spanned_by(
                    &s.ty,
                    format!(
                        "take the source by shared reference: write `&{}`",
                        sr.elem.to_token_stream()
                    ),
                );
            }
            for p in &rule.params {
                if let Some((role @ (Role::Len | Role::DstOffset | Role::SrcOffset), at)) = p.role {
                    cx.error_at(
                        at,
                        format!("`{}` is for raw-pointer copies; a slice-shaped copy's buffers carry their own length", role.attr()),
                    );
                }
            }
            for (name, kind) in [("dst", rule.args.dst_kind), ("src", rule.args.src_kind)] {
                if let Some((_, at)) = kind {
                    cx.error_at(
                        at,
                        format!("`{name} = ...` declares where a raw pointer points; `{name}` is a reference, whose type already says where it lives"),
                    );
                }
            }
            let mut unknown = Vec::new();
            let de = check_elem(cx, element_of(&dr.elem), &mut unknown);
            let se = check_elem(cx, element_of(&sr.elem), &mut unknown);
            check_same_elem(cx, de, se);
            Some((
                Shape::Slice {
                    dst: (*dr.elem).clone(),
                    src: (*sr.elem).clone(),
                },
                unknown,
            ))
        }
        (Type::Ptr(dp), Type::Ptr(sp)) => {
            if matches!(dp.mutability, syn::PointerMutability::Const(_)) {
                cx.error_spanned_by(
                    &d.ty,
                    format!(
                        "the destination must be mutable: write `*mut {}`",
                        dp.elem.to_token_stream()
                    ),
                );
            }
            if matches!(sp.mutability, syn::PointerMutability::Mut(_)) {
                cx.error_spanned_by(
                    &s.ty,
                    format!(
                        "the source pointer must be `*const {}`",
                        sp.elem.to_token_stream()
                    ),
                );
            }
            let dst_kind = declared_kind(cx, rule.args.dst_kind, d, "dst");
            let src_kind = declared_kind(cx, rule.args.src_kind, s, "src");
            let mut unknown = Vec::new();
            let de = check_elem(cx, Some(&*dp.elem), &mut unknown);
            let se = check_elem(cx, Some(&*sp.elem), &mut unknown);
            check_same_elem(cx, de, se);
            let len = pointer_extent(cx, rule, Role::Len);
            let dst_offset = pointer_extent(cx, rule, Role::DstOffset);
            let src_offset = pointer_extent(cx, rule, Role::SrcOffset);
            if len.is_none() {
                cx.error_spanned_by(
                    &rule.func.sig.ident,
                    "a raw-pointer copy needs its element count: mark the `usize` length parameter with `#[len]`",
                );
            }
            Some((
                Shape::Pointer {
                    elem: (*dp.elem).clone(),
                    dst_kind: dst_kind?,
                    src_kind: src_kind?,
                    len: len?,
                    dst_offset,
                    src_offset,
                },
                unknown,
            ))
        }
        (dt, st) => {
            for (p, t) in [(d, dt), (s, st)] {
                if !matches!(t, Type::Reference(_) | Type::Ptr(_)) {
                    let role = p.role.map_or("", |(r, _)| r.attr());
                    cx.error_spanned_by(
                        t,
                        format!(
                            "`{role}` must be a reference (`&mut [T]`, `&CudaSlice<T>`, ...) or a raw pointer; a buffer taken by value cannot receive its derivative"
                        ),
                    );
                }
            }
            if matches!(dt, Type::Reference(_) | Type::Ptr(_))
                && matches!(st, Type::Reference(_) | Type::Ptr(_))
            {
                cx.error_spanned_by(
                    st,
                    "`#[dst]` and `#[src]` must both be references or both be raw pointers",
                );
            }
            None
        }
    }
}

/// A raw pointer cannot say whether it points at host or device memory, so the attribute must.
fn declared_kind(
    cx: &Ctxt,
    kind: Option<(MemKind, Span)>,
    p: &Param,
    name: &str,
) -> Option<MemKind> {
    if kind.is_none() {
        cx.error_spanned_by(
            &p.ty,
            format!(
                "a raw pointer cannot say where it points: declare its memory kind in the attribute, e.g. `#[derivative_rule(copy, {name} = device)]` (one of `host`, `pinned`, `device`, `unified`)"
            ),
        );
    }
    kind.map(|(k, _)| k)
}

/// Offsets and lengths count elements: they must be `usize`.
fn pointer_extent(cx: &Ctxt, rule: &Rule, role: Role) -> Option<usize> {
    let i = rule
        .params
        .iter()
        .position(|p| p.role.is_some_and(|(r, _)| r == role))?;
    let ty = &rule.params[i].ty;
    if !matches!(ty, Type::Path(p) if p.path.is_ident("usize")) {
        cx.error_spanned_by(
            ty,
            format!(
                "`{}` counts elements: its type must be `usize`",
                role.attr()
            ),
        );
    }
    for p in rule
        .params
        .iter()
        .filter(|p| p.role.is_some_and(|(r, _)| r == role))
        .skip(1)
    {
        if let Some((_, at)) = p.role {
            cx.error_at(at, format!("`{}` is given twice", role.attr()));
        }
    }
    Some(i)
}

/// Device work must be ordered after the primal copy on its stream: a device pointer rule with no
/// stream could only guess one, and DESIGN §4 forbids guessing.
fn check_device_pointer_stream(
    cx: &Ctxt,
    rule: &Rule,
    dst: MemKind,
    src: MemKind,
    stream: Option<usize>,
) {
    if stream.is_none() && (dst == MemKind::Device || src == MemKind::Device) {
        cx.error_spanned_by(
            &rule.func.sig.ident,
            "a copy involving device memory needs the stream it runs on: add a `&CudaStream` parameter (or mark one with `#[stream]`)",
        );
    }
}

/// The element type of a buffer pointee `X`: `[T]`, `[T; N]`, or the last type argument of a
/// generic container (`Vec<T>`, `CudaSlice<T>`, `CudaView<'a, T>`); `None` for opaque types.
fn element_of(x: &Type) -> Option<&Type> {
    match x {
        Type::Slice(s) => Some(&s.elem),
        Type::Array(a) => Some(&a.elem),
        Type::Paren(p) => element_of(&p.elem),
        Type::Path(p) => match &p.path.segments.last()?.arguments {
            PathArguments::AngleBracketed(a) => a.args.iter().rev().find_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            }),
            _ => None,
        },
        _ => None,
    }
}

/// The simple name of an element type (`f32`, `half::f16` → `f16`, `Complex<f32>` → `Complex<f32>`).
fn elem_name(t: &Type) -> Option<String> {
    let Type::Path(p) = t else { return None };
    let seg = p.path.segments.last()?;
    match &seg.arguments {
        PathArguments::None => Some(seg.ident.to_string()),
        PathArguments::AngleBracketed(a) if seg.ident == "Complex" && a.args.len() == 1 => {
            let Some(GenericArgument::Type(inner)) = a.args.first() else {
                return None;
            };
            Some(format!("Complex<{}>", elem_name(inner)?))
        }
        _ => None,
    }
}

/// Non-differentiable elements are refused when the rule is written, not halfway through a
/// reverse pass (the seed's gap). Unknown ones get a `Differentiable` bound at their span.
fn check_elem<'a>(
    cx: &Ctxt,
    elem: Option<&'a Type>,
    unknown: &mut Vec<Type>,
) -> Option<(String, &'a Type)> {
    let elem = elem?;
    let name = elem_name(elem);
    match name.as_deref() {
        Some(n) if NOT_DIFFERENTIABLE.contains(&n) => {
            cx.error_spanned_by(
                elem,
                format!(
                    "`{n}` is not a differentiable element type: derivative rules need f32, f64, f16, bf16, Complex<f32> or Complex<f64>; \
                     integers and booleans carry no derivative, so copy them with a plain function, without `#[derivative_rule]`"
                ),
            );
            None
        }
        Some(n) if DIFFERENTIABLE.contains(&n) || n == "Complex<f32>" || n == "Complex<f64>" => {
            Some((n.to_string(), elem))
        }
        Some(n) if n.starts_with("Complex<") => {
            cx.error_spanned_by(
                elem,
                format!("`{n}` is not a differentiable element type: complex elements must be Complex<f32> or Complex<f64>"),
            );
            None
        }
        _ => {
            unknown.push(elem.clone());
            None
        }
    }
}

/// A copy moves elements unchanged: `dst` and `src` must hold the same element type.
fn check_same_elem(cx: &Ctxt, d: Option<(String, &Type)>, s: Option<(String, &Type)>) {
    let normalize = |n: &str| match n {
        "Complex32" | "c32" => "Complex<f32>".to_string(),
        "Complex64" | "c64" => "Complex<f64>".to_string(),
        other => other.to_string(),
    };
    if let (Some((dn, _)), Some((sn, st))) = (d, s) {
        if normalize(&dn) != normalize(&sn) {
            cx.error_at(
                st.span(),
                format!("element types differ: `#[dst]` holds `{dn}` but `#[src]` holds `{sn}`; a copy cannot convert, so make them the same"),
            );
        }
    }
}
