//! Stage 2: semantic checks. Each `check_*` function enforces one rule of DESIGN §5 and says why;
//! all of them run, so every problem shows in one compile, each at the token at fault. What the
//! macro cannot see (does a type implement `ShadowMemory`?) is left to trait bounds placed at the
//! argument's span by [`crate::expand`].

mod buffers;
mod collective;

use crate::args::MemKind;
use crate::errors::Ctxt;
use crate::parse::{Param, Role, Rule, VARIADIC_MESSAGE};
use crate::types::{find_impl_trait, is_comm_type, is_stream_type, replace_impl_trait, show};
use buffers::check_buffers;
pub use collective::{CheckedCollective, check_collective};
use quote::ToTokens;
use syn::{GenericArgument, PathArguments, ReturnType, Type};

/// Return types that are certainly not `()` or `Result<(), E>`.
const NOT_OUTCOMES: &[&str] = &[
    "Option", "Vec", "Box", "String", "bool", "char", "str", "f32", "f64", "i8", "i16", "i32",
    "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
];
/// Spelling of the unit-result return type, for messages.
const RESULT: &str = "Result";

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
}

/// The two shapes of copy rule.
#[allow(
    clippy::large_enum_variant,
    reason = "one value per rule, built once at compile time"
)]
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
    check_common(cx, rule);
    let dst = check_one_role(cx, rule, Role::Dst);
    let src = check_one_role(cx, rule, Role::Src);
    let stream = check_stream(cx, rule);
    let shape = match (dst, src) {
        (Some(dst), Some(src)) => check_buffers(cx, rule, dst, src),
        _ => None,
    };
    if let Some(Shape::Pointer {
        dst_kind, src_kind, ..
    }) = &shape
    {
        check_device_pointer_stream(cx, rule, *dst_kind, *src_kind, stream);
    }
    check_collective_roles_on_copy(cx, rule);
    if cx.has_errors() {
        return None;
    }
    let shape = shape?;
    let unsafety = matches!(rule.func.sig.safety, syn::Safety::Unsafe(_))
        || matches!(shape, Shape::Pointer { .. });
    Some(Checked {
        dst: dst?,
        src: src?,
        stream,
        shape,
        unsafety,
    })
}

/// The checks every rule kind shares: a kind, and a function the generated rules can call.
fn check_common(cx: &Ctxt, rule: &Rule) {
    check_rule_kind(cx, rule);
    check_async(cx, rule);
    check_variadic(cx, rule);
    check_receiver(cx, rule);
    check_impl_trait(cx, rule);
    check_return_type(cx, rule);
}

/// The communicator and the ranks belong to collective rules; on a copy they would be silently
/// passed through, and the user would believe the copy is a collective.
fn check_collective_roles_on_copy(cx: &Ctxt, rule: &Rule) {
    for p in &rule.params {
        let Some(mark) = &p.role else { continue };
        let kinds = match mark.role {
            Role::Comm => "`broadcast`, `reduce`, `all_gather`, `reduce_scatter`, `all_reduce`, `send`, `recv`, `send_recv`".to_string(),
            Role::Root | Role::Peer | Role::SendTo | Role::RecvFrom => {
                crate::errors::one_of(&crate::args::kinds_with(mark.role))
            }
            _ => continue,
        };
        cx.error_spanned_by(
            &mark.attr,
            format!(
                "`{}` belongs to collective rules ({kinds}); a copy has no {}: remove it, or make the rule a collective",
                mark.role.attr(),
                mark.role.noun(),
            ),
        );
    }
}

/// A rule needs a kind: it says which semantics (DESIGN §3) the generated rules implement.
fn check_rule_kind(cx: &Ctxt, rule: &Rule) {
    if rule.args.kind.is_none() {
        let msg = if rule.args.empty {
            "missing rule kind: write `#[derivative_rule(copy)]`"
        } else {
            "missing rule kind: put `copy` first, as in `#[derivative_rule(copy, ...)]`"
        };
        cx.error_at(proc_macro2::Span::call_site(), msg);
    }
}

/// The generated rules call the primal synchronously, once per lane: an `async fn` would only
/// build a future, and the copy would never run.
fn check_async(cx: &Ctxt, rule: &Rule) {
    if let Some(a) = &rule.func.sig.asyncness {
        cx.error_spanned_by(
            a,
            "a copy rule's primal must be synchronous: remove `async` (CUDA work is already asynchronous on its stream)",
        );
    }
}

/// The generated rules forward every argument to the primal; a C-variadic tail has no type the
/// rule could take, shadow or forward.
fn check_variadic(cx: &Ctxt, rule: &Rule) {
    if let Some(v) = &rule.func.sig.variadic {
        cx.error_spanned_by(v.dots, VARIADIC_MESSAGE);
    }
}

/// The generated rules are free functions next to the primal and call it by name, so the primal
/// cannot be a method; and a role belongs on a buffer parameter, never on `self`.
fn check_receiver(cx: &Ctxt, rule: &Rule) {
    for p in rule.params.iter().filter(|p| p.receiver) {
        match &p.role {
            Some(mark) => cx.error_spanned_by(
                &mark.attr,
                format!(
                    "`{a}` cannot be on `self`: the buffers of a copy rule are ordinary parameters, e.g. `{a} {n}: &mut [f32]`",
                    a = mark.role.attr(),
                    n = if mark.role == Role::Src { "src" } else { "dst" },
                ),
            ),
            None => cx.error_spanned_by(
                &p.tokens,
                "copy rules are free functions: move this method's body into a function that takes the buffers as parameters",
            ),
        }
    }
}

/// The generated rules repeat each parameter's type (in bounds, closures and their own
/// signatures), and `impl Trait` can be written in none of those places: a named generic can.
fn check_impl_trait(cx: &Ctxt, rule: &Rule) {
    for p in rule.params.iter().filter(|p| !p.receiver) {
        if let Some(it) = find_impl_trait(&p.ty) {
            let bounds = it.bounds.to_token_stream();
            cx.error_spanned_by(
                it,
                format!(
                    "`impl Trait` cannot be used in a rule's parameters: declare a generic parameter instead, e.g. `fn {}<B: {}>(..., {}: {})`",
                    rule.func.sig.ident,
                    crate::errors::type_str(&bounds),
                    p.name,
                    show(&replace_impl_trait(&p.ty)),
                ),
            );
        }
    }
}

/// The generated rules turn the primal's outcome into the runtime's `Result`; any other value
/// would be silently dropped, and a copy has no value to differentiate. What the macro cannot
/// judge by name (a type alias, `io::Result<()>`) is left to a `PrimalOutcome` bound.
fn check_return_type(cx: &Ctxt, rule: &Rule) {
    let ReturnType::Type(_, ty) = &rule.func.sig.output else {
        return;
    };
    let ok = match &**ty {
        Type::Tuple(t) => t.elems.is_empty(),
        Type::Paren(_) | Type::Group(_) | Type::Macro(_) => true,
        Type::Path(p) => {
            p.qself.is_some()
                || p.path.segments.last().is_some_and(|seg| {
                    let name = seg.ident.to_string();
                    if name == RESULT {
                        match &seg.arguments {
                            PathArguments::AngleBracketed(a) => match a.args.first() {
                                Some(GenericArgument::Type(Type::Tuple(t))) => t.elems.is_empty(),
                                // `io::Result<()>`-style aliases have one argument, the value.
                                _ => false,
                            },
                            _ => true, // an alias such as `fmt::Result`: the bound decides
                        }
                    } else {
                        !NOT_OUTCOMES.contains(&name.as_str())
                    }
                })
        }
        _ => false,
    };
    if !ok {
        cx.error_spanned_by(
            ty,
            format!(
                "a copy primitive must return `()` or `Result<(), E>`, not `{}`: a copy has no value to differentiate",
                show(ty)
            ),
        );
    }
}

/// Exactly one `#[dst]` and one `#[src]`: a copy rule moves one buffer into one other. When the
/// role is missing and exactly one parameter could take it, the error points at that parameter.
fn check_one_role(cx: &Ctxt, rule: &Rule, wanted: Role) -> Option<usize> {
    let found: Vec<usize> = rule
        .with_role(wanted)
        .into_iter()
        .filter(|&i| !rule.params[i].receiver)
        .collect();
    for &i in found.iter().skip(1) {
        cx.error_spanned_by(
            rule.params[i].role_tokens(),
            format!(
                "`{a}` is given twice: {rule} has exactly one {noun}; remove this `{a}`, or give `{n}` its real role",
                a = wanted.attr(),
                rule = rule.kind_noun(),
                noun = wanted.noun(),
                n = rule.params[i].name,
            ),
        );
    }
    if found.is_empty() && !rule.dropped_roles.contains(&wanted) {
        let candidates: Vec<&Param> = rule
            .params
            .iter()
            .filter(|p| p.role.is_none() && !p.receiver && fits_role(&p.ty, wanted))
            .collect();
        match candidates.as_slice() {
            [p] => cx.error_spanned_by(
                &p.tokens,
                format!(
                    "no parameter is marked `{a}`: if `{n}` is the {noun}, write `{a} {n}: {t}`",
                    a = wanted.attr(),
                    n = p.name,
                    noun = wanted.noun(),
                    t = show(&p.ty)
                ),
            ),
            _ => cx.error_spanned_by(
                &rule.func.sig.ident,
                format!(
                    "no parameter is marked `{a}`: mark the {noun} with `{a}`, e.g. `{a} {n}: {t}`",
                    a = wanted.attr(),
                    noun = wanted.noun(),
                    n = if wanted == Role::Dst { "dst" } else { "src" },
                    t = match (wanted == Role::Dst, rule.collective().is_some()) {
                        (true, false) => "&mut [f32]",
                        (false, false) => "&[f32]",
                        (true, true) => "&mut CudaSlice<f32>",
                        (false, true) => "&CudaSlice<f32>",
                    },
                ),
            ),
        }
    }
    found.first().copied()
}

/// Whether a parameter of type `ty` could be the buffer of `role`.
fn fits_role(ty: &Type, role: Role) -> bool {
    match (ty, role) {
        (Type::Reference(r), Role::Dst) => r.mutability.is_some(),
        (Type::Reference(r), Role::Src) => {
            r.mutability.is_none() && !is_stream_type(ty) && !is_comm_type(ty)
        }
        (Type::Ptr(p), Role::Dst) => matches!(p.mutability, syn::PointerMutability::Mut(_)),
        (Type::Ptr(p), Role::Src) => matches!(p.mutability, syn::PointerMutability::Const(_)),
        _ => false,
    }
}

/// The stream orders the shadow work after the primal copy (DESIGN §4): one stream, named by
/// `#[stream]` or found by its type (`CudaStream`, `Arc<CudaStream>`, or references to them).
fn check_stream(cx: &Ctxt, rule: &Rule) -> Option<usize> {
    let marked = rule.with_role(Role::Stream);
    for &i in marked.iter().skip(1) {
        cx.error_spanned_by(
            rule.params[i].role_tokens(),
            "`#[stream]` is given twice: a copy runs on one stream; keep the mark on that one",
        );
    }
    if let Some(&i) = marked.first() {
        return Some(i);
    }
    let by_type: Vec<usize> = (0..rule.params.len())
        .filter(|&i| rule.params[i].role.is_none() && is_stream_type(&rule.params[i].ty))
        .collect();
    if by_type.len() > 1 {
        cx.error_spanned_by(
            &rule.params[by_type[1]].tokens,
            "several parameters are CUDA streams: mark the one the copy runs on with `#[stream]`",
        );
    }
    by_type.first().copied()
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
