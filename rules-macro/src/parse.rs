//! Stage 1: parse the attribute arguments and the function into a [`Rule`], stripping the role
//! attributes (`#[dst]`, `#[src]`, ...) from the parameters. Syntax errors are recorded in the
//! [`Ctxt`]; semantic checks are the next stage's ([`crate::check`]).

use crate::errors::{Ctxt, did_you_mean};
use proc_macro2::{Span, TokenStream};
use quote::format_ident;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ItemFn, Meta, Pat, Path, Type};

/// The rule kinds the attribute knows.
pub const RULE_KINDS: &[&str] = &[COPY];
/// `#[derivative_rule(copy)]`: `dst ← src`.
pub const COPY: &str = "copy";
/// Future kinds, named so that the error can say they are not available yet.
pub const PLANNED_KINDS: &[&str] = &[
    "memset",
    "fill",
    "copy2d",
    "copy3d",
    "broadcast",
    "all_gather",
];

/// `crate = path`: where the runtime is, for users who renamed it.
pub const CRATE: &str = "crate";
/// `dst = kind`: the memory kind a raw destination pointer points into.
pub const DST: &str = "dst";
/// `src = kind`: the memory kind a raw source pointer points into.
pub const SRC: &str = "src";
/// `forward = name`: the forward rule's name.
pub const FORWARD: &str = "forward";
/// `augmented_primal = name`: the augmented primal's name.
pub const AUGMENTED_PRIMAL: &str = "augmented_primal";
/// `reverse = name`: the reverse rule's name.
pub const REVERSE: &str = "reverse";
/// Every `key = value` argument.
pub const ARG_KEYS: &[&str] = &[CRATE, DST, SRC, FORWARD, AUGMENTED_PRIMAL, REVERSE];

/// Memory kinds a raw pointer can declare.
pub const MEMORY_KINDS: &[&str] = &["host", "pinned", "device", "unified"];

/// Parameter role attributes.
pub const ROLES: &[&str] = &["dst", "src", "len", "dst_offset", "src_offset", "stream"];
/// Attribute names that are likely meant as roles, with the role they mean.
const ROLE_SYNONYMS: &[(&str, &str)] = &[
    ("dest", "dst"),
    ("destination", "dst"),
    ("out", "dst"),
    ("output", "dst"),
    ("to", "dst"),
    ("source", "src"),
    ("input", "src"),
    ("from", "src"),
    ("length", "len"),
    ("count", "len"),
    ("n", "len"),
    ("offset", "dst_offset` or `#[src_offset"),
];

/// The role of a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The destination buffer or pointer.
    Dst,
    /// The source buffer or pointer.
    Src,
    /// The element count of a pointer copy.
    Len,
    /// The destination offset of a pointer copy.
    DstOffset,
    /// The source offset of a pointer copy.
    SrcOffset,
    /// The CUDA stream the copy runs on.
    Stream,
}

impl Role {
    fn from_name(name: &str) -> Option<Role> {
        Some(match name {
            "dst" => Role::Dst,
            "src" => Role::Src,
            "len" => Role::Len,
            "dst_offset" => Role::DstOffset,
            "src_offset" => Role::SrcOffset,
            "stream" => Role::Stream,
            _ => return None,
        })
    }

    /// The attribute spelling, e.g. `#[dst]`.
    pub fn attr(self) -> &'static str {
        match self {
            Role::Dst => "#[dst]",
            Role::Src => "#[src]",
            Role::Len => "#[len]",
            Role::DstOffset => "#[dst_offset]",
            Role::SrcOffset => "#[src_offset]",
            Role::Stream => "#[stream]",
        }
    }
}

/// A memory kind named in the attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    /// Pageable host memory.
    Host,
    /// Pinned host memory.
    Pinned,
    /// Device memory.
    Device,
    /// Unified memory.
    Unified,
}

/// The parsed attribute arguments.
#[derive(Default)]
pub struct RuleArgs {
    /// The rule kind and where it was written.
    pub kind: Option<Ident>,
    /// `crate = path`.
    pub krate: Option<Path>,
    /// `dst = kind`.
    pub dst_kind: Option<(MemKind, Span)>,
    /// `src = kind`.
    pub src_kind: Option<(MemKind, Span)>,
    /// `forward = name`.
    pub forward: Option<Ident>,
    /// `augmented_primal = name`.
    pub augmented_primal: Option<Ident>,
    /// `reverse = name`.
    pub reverse: Option<Ident>,
}

/// One function parameter, with its role.
pub struct Param {
    /// The name generated code uses for it (the user's identifier, or `__argN` for patterns).
    pub name: Ident,
    /// Its type.
    pub ty: Type,
    /// Its role and the role attribute's span, if it has one.
    pub role: Option<(Role, Span)>,
    /// Whether this is a `self` receiver.
    pub receiver: bool,
    /// The whole parameter's span.
    pub span: Span,
}

/// A parsed rule: the arguments, the function (role attributes stripped) and its parameters.
pub struct Rule {
    /// Attribute arguments.
    pub args: RuleArgs,
    /// The user's function as it will be re-emitted.
    pub func: ItemFn,
    /// Its parameters in order.
    pub params: Vec<Param>,
}

/// Parses the attribute's arguments, recording every problem in `cx`.
pub fn parse_args(cx: &Ctxt, attr: TokenStream) -> RuleArgs {
    let mut args = RuleArgs::default();
    let parser = syn::meta::parser(|meta| {
        let path = &meta.path;
        let name = match path.get_ident() {
            Some(id) => id.to_string(),
            None if path.segments.len() == 1 && path.leading_colon.is_none() => {
                path.segments[0].ident.to_string()
            }
            None => {
                cx.error_spanned_by(path, "expected a rule kind (`copy`) or `key = value`");
                return skip_value(&meta);
            }
        };
        if !meta.input.peek(syn::Token![=]) {
            if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
                cx.error_spanned_by(
                    path,
                    format!(
                        "malformed argument `{name}`: write `{name}` alone or `{name} = value`"
                    ),
                );
                // Swallow the rest of this argument so later ones are still read.
                let _ = meta.input.step(|c| {
                    let mut rest = *c;
                    while let Some((_, next)) = rest.token_tree() {
                        if next.punct().is_some_and(|(p, _)| p.as_char() == ',') {
                            return Ok(((), next));
                        }
                        rest = next;
                    }
                    Ok(((), rest))
                });
                return Ok(());
            }
            return parse_kind(cx, &mut args, path, &name);
        }
        match name.as_str() {
            CRATE => {
                let value = meta.value()?;
                let krate: Path = if value.peek(syn::LitStr) {
                    value.parse::<syn::LitStr>()?.parse()?
                } else {
                    Path::parse_mod_style(value)?
                };
                set_once(cx, &mut args.krate, krate, path, CRATE);
            }
            DST | SRC => {
                let value: Ident = meta.value()?.parse()?;
                let kind = match value.to_string().as_str() {
                    "host" => MemKind::Host,
                    "pinned" => MemKind::Pinned,
                    "device" => MemKind::Device,
                    "unified" => MemKind::Unified,
                    other => {
                        cx.error_spanned_by(
                            &value,
                            format!(
                                "unknown memory kind `{other}`: expected one of `host`, `pinned`, `device`, `unified`{}",
                                did_you_mean(other, MEMORY_KINDS)
                            ),
                        );
                        return Ok(());
                    }
                };
                let slot = if name == DST {
                    &mut args.dst_kind
                } else {
                    &mut args.src_kind
                };
                set_once(cx, slot, (kind, value.span()), path, &name);
            }
            FORWARD | AUGMENTED_PRIMAL | REVERSE => {
                let value: Ident = meta.value()?.parse()?;
                let slot = match name.as_str() {
                    FORWARD => &mut args.forward,
                    AUGMENTED_PRIMAL => &mut args.augmented_primal,
                    _ => &mut args.reverse,
                };
                set_once(cx, slot, value, path, &name);
            }
            _ => {
                cx.error_spanned_by(
                    path,
                    format!(
                        "unknown argument `{name}`: expected one of {}{}",
                        ARG_KEYS
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        did_you_mean(&name, ARG_KEYS)
                    ),
                );
                return skip_value(&meta);
            }
        }
        Ok(())
    });
    if let Err(e) = parser.parse2(attr) {
        cx.syn_error(e);
    }
    args
}

fn parse_kind(cx: &Ctxt, args: &mut RuleArgs, path: &Path, name: &str) -> syn::Result<()> {
    let ident = path.segments[0].ident.clone();
    if let Some(first) = &args.kind {
        cx.error_spanned_by(
            path,
            format!("a rule has one kind, and `{first}` was already given"),
        );
    } else if RULE_KINDS.contains(&name) {
        args.kind = Some(ident);
    } else if PLANNED_KINDS.contains(&name) {
        cx.error_spanned_by(
            path,
            format!("the rule kind `{name}` is not supported yet; supported kinds: `copy`"),
        );
        args.kind = Some(ident);
    } else if ARG_KEYS.contains(&name) {
        cx.error_spanned_by(
            path,
            format!("`{name}` needs a value: write `{name} = ...`"),
        );
    } else {
        cx.error_spanned_by(
            path,
            format!(
                "unknown rule kind `{name}`: supported kinds: `copy`{}",
                did_you_mean(name, RULE_KINDS)
            ),
        );
        args.kind = Some(ident);
    }
    Ok(())
}

fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if !meta.input.is_empty() && !meta.input.peek(syn::Token![,]) {
        meta.input.parse::<proc_macro2::TokenTree>()?;
    }
    Ok(())
}

fn set_once<T>(cx: &Ctxt, slot: &mut Option<T>, value: T, at: &Path, name: &str) {
    if slot.is_some() {
        cx.error_spanned_by(at, format!("`{name}` is given twice; keep one"));
    } else {
        *slot = Some(value);
    }
}

/// Parses the annotated item as a function and reads its parameters' roles, stripping the role
/// attributes. Returns `None` (with an error recorded) when the item is not a function.
pub fn parse_fn(cx: &Ctxt, args: RuleArgs, item: TokenStream) -> Option<Rule> {
    let mut func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let at = item
                .into_iter()
                .find(|t| !matches!(t, proc_macro2::TokenTree::Punct(_)));
            let span = at.map_or_else(Span::call_site, |t| t.span());
            cx.error_at(
                span,
                "`#[derivative_rule]` goes on a function: the copy primitive whose derivative you want",
            );
            return None;
        }
    };
    let mut params = Vec::new();
    for (i, arg) in func.sig.inputs.iter_mut().enumerate() {
        let span = arg.span();
        match arg {
            FnArg::Receiver(r) => {
                let role = take_roles(cx, &mut r.attrs);
                params.push(Param {
                    name: Ident::new("self", r.self_token.span),
                    ty: syn::parse_quote!(Self),
                    role,
                    receiver: true,
                    span,
                });
            }
            FnArg::Typed(pt) => {
                let role = take_roles(cx, &mut pt.attrs);
                let name = match &*pt.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
                    other => format_ident!("__arg{}", i, span = other.span()),
                };
                params.push(Param {
                    name,
                    ty: (*pt.ty).clone(),
                    role,
                    receiver: false,
                    span,
                });
            }
        }
    }
    Some(Rule { args, func, params })
}

/// Removes role attributes from `attrs`, returning the role; reports repeated roles, roles with
/// arguments, and unknown attributes that look like misspelled roles.
fn take_roles(cx: &Ctxt, attrs: &mut Vec<Attribute>) -> Option<(Role, Span)> {
    let mut role: Option<(Role, Span)> = None;
    attrs.retain(|attr| {
        let Some(ident) = attr.path().get_ident() else {
            return true;
        };
        let name = ident.to_string();
        match Role::from_name(&name) {
            Some(r) => {
                if !matches!(attr.meta, Meta::Path(_)) {
                    cx.error_spanned_by(attr, format!("`#[{name}]` takes no arguments"));
                }
                match role {
                    Some((prev, _)) if prev == r => cx.error_spanned_by(
                        attr,
                        format!("`#[{name}]` is repeated on this parameter"),
                    ),
                    Some((prev, _)) => cx.error_spanned_by(
                        attr,
                        format!(
                            "a parameter has one role, and this one is already `{}`",
                            prev.attr()
                        ),
                    ),
                    None => role = Some((r, attr.span())),
                }
                false
            }
            None => {
                let suggestion = ROLE_SYNONYMS
                    .iter()
                    .find(|(s, _)| *s == name)
                    .map(|(_, r)| format!("; did you mean `#[{r}]`?"))
                    .unwrap_or_else(|| {
                        crate::errors::closest(&name, ROLES)
                            .map(|r| format!("; did you mean `#[{r}]`?"))
                            .unwrap_or_default()
                    });
                if suggestion.is_empty() {
                    return true; // someone else's attribute (`#[cfg]`, ...): leave it to rustc
                }
                cx.error_spanned_by(
                    attr,
                    format!(
                        "unknown parameter attribute `#[{name}]`: roles are {}{suggestion}",
                        ROLES
                            .iter()
                            .map(|r| format!("`#[{r}]`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                false
            }
        }
    });
    role
}
