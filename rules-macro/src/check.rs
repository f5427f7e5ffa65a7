//! Stage 2: semantic checks. Each `check_*` function enforces one rule and says why; all of them
//! run, so every problem shows in one compile, each at the token at fault. The result is one
//! [`Plan`] for every kind: the checks every rule shares are here, those of each kind in a module
//! of their own. What the macro cannot see (does a type implement `ShadowMemory`?) is left to
//! trait bounds placed at the argument's span by [`crate::expand`].

mod array;
mod buffers;
pub use buffers::usize_by_name;
mod collective;
mod copy;
mod params;
mod region;

use crate::ctxt::Ctxt;
use crate::model::{CFG, IN_IMPL, Kind, Role};
use crate::parse::{Param, Rule, VARIADIC_MESSAGE};
use crate::plan::Plan;
use crate::text::type_str;
use crate::types::{find_impl_trait, is_comm_type, is_stream_type, replace_impl_trait, show};
use quote::ToTokens;
use syn::{GenericArgument, PathArguments, ReturnType, Type};

/// Return types that are certainly not `()` or `Result<(), E>`.
const NOT_OUTCOMES: &[&str] = &[
    "Option", "Vec", "Box", "String", "bool", "char", "str", "f32", "f64", "i8", "i16", "i32",
    "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
];
/// Spelling of the unit-result return type, for messages.
const RESULT: &str = "Result";

/// Runs every check; returns the plan when none failed. A kind's own checks run once the kind
/// is known; an unknown kind (already reported) gets the shared checks only, so its rule's other
/// problems still show without guessing which kind was meant.
pub fn check(cx: &Ctxt, rule: &Rule) -> Option<Plan> {
    check_rule_kind(cx, rule);
    check_async(cx, rule);
    check_variadic(cx, rule);
    check_receiver(cx, rule);
    check_impl_trait(cx, rule);
    check_return_type(cx, rule);
    check_configured_roles(cx, rule);
    check_restore(cx, rule);
    let plan = match rule.kind()? {
        Kind::Copy => copy::check_copy(cx, rule),
        kind if kind.is_region() => region::check_region(cx, rule, kind),
        kind => collective::check_collective(cx, rule, kind),
    };
    if cx.has_errors() { None } else { plan }
}

/// `restore` saves the destination's old box on one device and writes it back after the
/// reverse's shadow work; a collective's output spans every rank, which one rank cannot restore.
fn check_restore(cx: &Ctxt, rule: &Rule) {
    if let (Some(at), Some(kind)) = (&rule.args.restore, rule.kind())
        && kind.is_collective()
    {
        cx.error_spanned_by(
            at,
            format!(
                "`restore` is for rules that overwrite a destination on one device (`copy`, `memset`, `fill`, `copy2d`, `copy3d`); {} cannot restore every rank's output: remove it",
                kind.noun()
            ),
        );
    }
}

/// The generated rules hand a role's parameter to the runtime in every configuration; a role on
/// a parameter that `#[cfg]` may remove would leave the rule without its buffer, length or
/// stream. Other parameters (`#[inert]` ones included) may be configured out: the generated rules
/// repeat their `#[cfg]`.
fn check_configured_roles(cx: &Ctxt, rule: &Rule) {
    for p in &rule.params {
        if let (Some(mark), Some(cfg)) = (&p.role, p.cfg.first())
            && mark.role != Role::Inert
        {
            cx.error_spanned_by(
                cfg,
                format!(
                    "`{}` cannot be configured out: a rule needs its {} in every configuration; put the `#[{CFG}]` on the whole function instead",
                    mark.role.attr(),
                    mark.role.noun()
                ),
            );
        }
    }
}

/// The parameters that could be found by their type (a stream, a communicator): unmarked, and
/// present in every configuration.
fn unmarked(rule: &Rule, by_type: fn(&Type) -> bool) -> Vec<usize> {
    (0..rule.params.len())
        .filter(|&i| {
            let p = &rule.params[i];
            p.role.is_none() && p.cfg.is_empty() && !p.receiver && by_type(&p.ty)
        })
        .collect()
}

/// A rule needs a kind: it says which semantics the generated rules implement.
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

/// The generated rules are functions next to the primal that call it with the buffers (by name,
/// or as `Self::name` with `in_impl`), so the primal cannot be a method: the error names the
/// associated function that works. A role belongs on a buffer parameter, never on `self`.
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
                format!(
                    "a rule's primitive cannot be a method: its rule object calls it as a function. Take the receiver as an ordinary parameter and mark the rule `{IN_IMPL}`: `#[derivative_rule({kind}, {IN_IMPL})] fn {name}(this: {recv}, ...)`, called as `Self::{name}_rule(this, ...)`; if `this` holds the stream the copy runs on, implement `rules_runtime::ops::AsStream` for `Self` (or mark the stream parameter `#[stream]`); if not, mark it `#[inert]`",
                    kind = rule.kind().unwrap_or(Kind::Copy).name(),
                    name = rule.func.sig.ident,
                    recv = receiver_type(&rule.func.sig),
                ),
            ),
        }
    }
}

/// The receiver's type as an ordinary parameter's: `&Self`, `&mut Self` or `Self`.
fn receiver_type(sig: &syn::Signature) -> &'static str {
    match sig.receiver().map(|r| &r.kind) {
        Some(syn::ReceiverKind::Reference(_, _, Some(_))) => "&mut Self",
        Some(syn::ReceiverKind::Reference(_, _, None)) => "&Self",
        _ => "Self",
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
                    type_str(&bounds),
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
pub(crate) fn check_one_role(cx: &Ctxt, rule: &Rule, wanted: Role) -> Option<usize> {
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
    // A method is refused as a whole: that it has no buffer is the same problem again.
    if found.is_empty() && !rule.dropped_roles.contains(&wanted) && !rule.has_receiver() {
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
                    t = match (
                        wanted == Role::Dst,
                        rule.kind().is_some_and(Kind::is_collective)
                    ) {
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
