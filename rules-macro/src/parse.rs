//! Stage 1b: the annotated function. Reads each parameter's role and strips the role attributes
//! (`#[dst]`, `#[src]`, ...) before the function is re-emitted, as pyo3 does with `#[pyo3]`.
//! Syntax errors are recorded in the [`Ctxt`], each at the token at fault; semantic checks are the
//! next stage's ([`crate::check`]).

use crate::args::RuleArgs;
use crate::ctxt::Ctxt;
use crate::model::{BUILTIN_ATTRIBUTES, CFG, DOC, Kind, ROLE_SYNONYMS, Role};
use crate::text::{closest, edit_distance};
use crate::types::ungroup;
use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident};
use syn::parse::{Parse, ParseStream};
use syn::{
    Attribute, FnArg, ForeignItemFn, Ident, Meta, Pat, Signature, TraitItemFn, Type, Visibility,
};

/// A role attribute on a parameter.
pub struct RoleAttr {
    /// The role.
    pub role: Role,
    /// The attribute's tokens, for errors.
    pub attr: TokenStream,
}

/// One function parameter, with its role.
pub struct Param {
    /// The name generated code uses for it (the user's identifier, or `__argN` for patterns).
    pub name: Ident,
    /// Its type.
    pub ty: Type,
    /// Its role, if it has one.
    pub role: Option<RoleAttr>,
    /// Whether this is a `self` receiver.
    pub receiver: bool,
    /// Its `#[cfg(...)]` attributes: the generated rules repeat them on the parameter and on the
    /// argument, so that a configured-out parameter is out of every call.
    pub cfg: Vec<Attribute>,
    /// The whole parameter's tokens (role attributes and doc comments stripped), for errors.
    pub tokens: TokenStream,
    /// Its doc comments' lines: rustc allows no doc comment on a function's parameter, so they
    /// are taken off the primal and put in the rule item's documentation.
    pub docs: Vec<String>,
}

impl Param {
    /// Whether the parameter is marked with `role`.
    pub fn has_role(&self, role: Role) -> bool {
        self.role.as_ref().is_some_and(|r| r.role == role)
    }

    /// The tokens of its role attribute, or of the whole parameter.
    pub fn role_tokens(&self) -> &TokenStream {
        self.role.as_ref().map_or(&self.tokens, |r| &r.attr)
    }
}

/// A parsed rule: the arguments, the function (role attributes stripped) and its parameters.
pub struct Rule {
    /// Attribute arguments.
    pub args: RuleArgs,
    /// The user's function as it will be re-emitted.
    pub func: Func,
    /// Its parameters in order.
    pub params: Vec<Param>,
    /// Roles written but not given to any parameter (a second role on one parameter, a role on
    /// `self`): already reported, so "no `#[src]` parameter" would only repeat the problem.
    pub dropped_roles: Vec<Role>,
}

impl Rule {
    /// The rule's kind, when it was given and known.
    pub fn kind(&self) -> Option<Kind> {
        self.args.kind.as_ref()?.kind
    }

    /// "a copy rule", "an `all_gather` rule": the rule, in words.
    pub fn kind_noun(&self) -> String {
        self.kind().unwrap_or(Kind::Copy).noun()
    }

    /// Whether the primal is `unsafe fn`.
    pub fn is_unsafe(&self) -> bool {
        matches!(self.func.sig.safety, syn::Safety::Unsafe(_))
    }

    /// Whether the primal is a method (it has a `self` receiver, reported by the checks).
    pub fn has_receiver(&self) -> bool {
        self.params.iter().any(|p| p.receiver)
    }

    /// Indices of the parameters marked with `role`.
    pub fn with_role(&self, role: Role) -> Vec<usize> {
        (0..self.params.len())
            .filter(|&i| self.params[i].has_role(role))
            .collect()
    }
}

/// The annotated function as the macro needs it: its body is kept as tokens, never parsed. The
/// macro re-emits it as it is, and parsing it (the bulk of a function's tokens) would add to
/// every rule's build time for nothing.
pub struct Func {
    /// Outer attributes (doc comments included).
    pub attrs: Vec<Attribute>,
    /// Visibility.
    pub vis: Visibility,
    /// Signature.
    pub sig: Signature,
    /// The body, `{ ... }`.
    pub body: Group,
}

/// A function's head: its attributes, visibility and signature.
struct Head(Vec<Attribute>, Visibility, Signature);

impl Parse for Head {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        Ok(Head(
            input.call(Attribute::parse_outer)?,
            input.parse()?,
            input.parse()?,
        ))
    }
}

impl Func {
    /// The function in `item`, if it is one: its last token is the body, kept as it is, and
    /// syn reads only the tokens before it (it would otherwise walk every token of the body).
    fn parse(item: &TokenStream) -> Option<Func> {
        let mut head: Vec<TokenTree> = item.clone().into_iter().collect();
        let body = match head.pop()? {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => g,
            _ => return None,
        };
        let Head(attrs, vis, sig) = syn::parse2(head.into_iter().collect()).ok()?;
        Some(Func {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl ToTokens for Func {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for attr in &self.attrs {
            attr.to_tokens(tokens);
        }
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.body.to_tokens(tokens);
    }
}

/// What the annotated item turned out to be.
pub enum Item {
    /// A function: a rule to check and expand.
    Rule(Box<Rule>),
    /// Something else (error recorded): these tokens are re-emitted as they are, role attributes
    /// stripped, so the rest of the crate keeps compiling.
    Other(TokenStream),
}

/// Parses the annotated item as a function and reads its parameters' roles, stripping the role
/// attributes. Anything else is reported and handed back to be re-emitted.
pub fn parse_fn(cx: &Ctxt, args: RuleArgs, item: TokenStream) -> Item {
    let Some(mut func) = Func::parse(&item) else {
        return not_a_function(cx, item);
    };
    let mut dropped_roles = Vec::new();
    let mut params = Vec::new();
    for (i, arg) in func.sig.inputs.iter_mut().enumerate() {
        let (role, docs) = match arg {
            FnArg::Receiver(r) => (
                take_roles(cx, &mut r.attrs, &mut dropped_roles),
                take_docs(&mut r.attrs),
            ),
            FnArg::Typed(pt) => (
                take_roles(cx, &mut pt.attrs, &mut dropped_roles),
                take_docs(&mut pt.attrs),
            ),
        };
        let tokens = arg.to_token_stream();
        match arg {
            FnArg::Receiver(r) => {
                if let Some(role) = &role {
                    dropped_roles.push(role.role);
                }
                params.push(Param {
                    name: Ident::new("self", r.self_token.span),
                    ty: syn::parse_quote!(Self),
                    role,
                    receiver: true,
                    cfg: Vec::new(),
                    tokens,
                    docs,
                });
            }
            FnArg::Typed(pt) => {
                let name = match &*pt.pat {
                    Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
                    other => {
                        let span = other.to_token_stream().into_iter().next().map(|t| t.span());
                        format_ident!("__arg{}", i, span = span.unwrap_or_else(Span::call_site))
                    }
                };
                params.push(Param {
                    name,
                    // A type that came through a `macro_rules!` `$t:ty` is wrapped in an
                    // invisible group; the checks read the type inside.
                    ty: ungroup(&pt.ty),
                    role,
                    receiver: false,
                    cfg: pt
                        .attrs
                        .iter()
                        .filter(|a| a.path().is_ident(CFG))
                        .cloned()
                        .collect(),
                    tokens,
                    docs,
                });
            }
        }
    }
    Item::Rule(Box::new(Rule {
        args,
        func,
        params,
        dropped_roles,
    }))
}

/// The attribute is on something that is not a function with a body: say what it needs, and hand
/// the item back with role attributes stripped (rustc would call them unknown attributes).
fn not_a_function(cx: &Ctxt, item: TokenStream) -> Item {
    let scratch = Ctxt::new();
    let mut dropped = Vec::new();
    let mut strip = |sig: &mut syn::Signature| {
        for arg in &mut sig.inputs {
            match arg {
                FnArg::Receiver(r) => {
                    let _ = take_roles(&scratch, &mut r.attrs, &mut dropped);
                }
                FnArg::Typed(pt) => {
                    let _ = take_roles(&scratch, &mut pt.attrs, &mut dropped);
                }
            }
        }
    };
    let signature = if let Ok(mut f) = syn::parse2::<ForeignItemFn>(item.clone()) {
        let sig = f.sig.clone();
        strip(&mut f.sig);
        Some((sig, f.into_token_stream()))
    } else if let Ok(mut f) = syn::parse2::<TraitItemFn>(item.clone()) {
        let sig = f.sig.clone();
        strip(&mut f.sig);
        Some((sig, f.into_token_stream()))
    } else {
        None
    };
    let _ = scratch.take(); // only `cx`'s error is reported
    let Some((sig, stripped)) = signature else {
        let at = item
            .clone()
            .into_iter()
            .find(|t| !matches!(t, TokenTree::Punct(_) | TokenTree::Group(_)));
        let span = at.map_or_else(Span::call_site, |t| t.span());
        cx.error_at(
            span,
            "`#[derivative_rule]` goes on a function: the copy primitive whose derivative you want, e.g. `fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32])`",
        );
        return Item::Other(item);
    };
    if let Some(v) = &sig.variadic {
        cx.error_spanned_by(v.dots, VARIADIC_MESSAGE);
    } else {
        cx.error_spanned_by(
            &sig.ident,
            format!(
                "`#[derivative_rule]` needs the function's body, and `{}` has none: write a Rust function that calls it, and put the attribute there",
                sig.ident
            ),
        );
    }
    Item::Other(stripped)
}

/// The error for C-variadic functions (shared with [`crate::check`]).
pub const VARIADIC_MESSAGE: &str = "variadic functions cannot have derivative rules: the rule must know every argument; wrap the call in a function with fixed parameters";

/// Removes the doc comments (`#[doc = "..."]`) from a parameter's attributes, returning their
/// text, one line each.
fn take_docs(attrs: &mut Vec<Attribute>) -> Vec<String> {
    let mut docs = Vec::new();
    attrs.retain(|attr| {
        if !attr.path().is_ident(DOC) {
            return true;
        }
        if let Meta::NameValue(nv) = &attr.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            docs.push(s.value().trim().to_string());
            return false;
        }
        // `#[doc(hidden)]` and other forms are not comments: rustc reports them as it would.
        true
    });
    docs
}

/// Removes role attributes from `attrs`, returning the role; reports repeated roles, roles with
/// arguments, and unknown attributes that look like misspelled roles (taking the role they most
/// likely mean, so that no "missing `#[dst]`" follows).
fn take_roles(cx: &Ctxt, attrs: &mut Vec<Attribute>, dropped: &mut Vec<Role>) -> Option<RoleAttr> {
    let mut role: Option<RoleAttr> = None;
    attrs.retain(|attr| {
        let Mark::Role(found) = read_role(cx, attr) else {
            return true;
        };
        let Some(r) = found else { return false };
        match &role {
            Some(prev) if prev.role == r => {
                cx.error_spanned_by(
                    attr,
                    format!("`{}` is repeated on this parameter; keep one", r.attr()),
                );
            }
            Some(prev) => {
                cx.error_spanned_by(
                    attr,
                    format!(
                        "a parameter has one role, and this one is already `{}`: put `{}` on the {} parameter",
                        prev.role.attr(),
                        r.attr(),
                        r.noun()
                    ),
                );
                dropped.push(r);
            }
            None => {
                role = Some(RoleAttr {
                    role: r,
                    attr: attr.to_token_stream(),
                });
            }
        }
        false
    });
    role
}

/// What a parameter attribute is to the macro.
enum Mark {
    /// Someone else's attribute (`#[cfg]`, ...): kept.
    Foreign,
    /// A role, or a misspelled one (reported) read as the role it most likely means; removed.
    Role(Option<Role>),
}

/// Reads one attribute on a parameter.
fn read_role(cx: &Ctxt, attr: &Attribute) -> Mark {
    let Some(ident) = attr.path().get_ident() else {
        return Mark::Foreign;
    };
    let name = ident.to_string();
    if let Some(r) = Role::from_name(&name) {
        if !matches!(attr.meta, Meta::Path(_)) {
            cx.error_spanned_by(
                attr,
                format!("`#[{name}]` takes no arguments: write `#[{name}]`"),
            );
        }
        return Mark::Role(Some(r));
    }
    // Only a bare word can be a misspelled role (roles take no arguments); the compiler's own
    // attributes (`///` is `#[doc = "..."]`) and anything with arguments are someone else's.
    if BUILTIN_ATTRIBUTES.contains(&name.as_str()) || !matches!(attr.meta, Meta::Path(_)) {
        return Mark::Foreign;
    }
    let (meant, hint) = match ROLE_SYNONYMS.iter().find(|(s, _)| *s == name) {
        Some((_, Some(r))) => (Some(*r), format!("; did you mean `{}`?", r.attr())),
        Some((_, None)) if name == "rank" => (
            None,
            "; did you mean `#[root]`, `#[peer]`, `#[send_to]` or `#[recv_from]`?".to_string(),
        ),
        Some((_, None)) if name == "pitch" => (
            None,
            "; did you mean `#[dst_pitch]` or `#[src_pitch]`?".to_string(),
        ),
        Some((_, None)) => (
            None,
            "; did you mean `#[dst_offset]` or `#[src_offset]`?".to_string(),
        ),
        None => {
            // A near miss only: one edit, or the role's letters reordered (`#[dts]`); another
            // macro's helper attribute two edits from a role (`#[arg]`) is not ours.
            let near = |r: &&str| {
                let mut a: Vec<char> = name.chars().collect();
                let mut b: Vec<char> = r.chars().collect();
                a.sort_unstable();
                b.sort_unstable();
                edit_distance(&name, r) <= 1 || a == b
            };
            let Some(r) = closest(&name, &Role::names()).filter(near) else {
                return Mark::Foreign;
            };
            (Role::from_name(r), format!("; did you mean `#[{r}]`?"))
        }
    };
    let roles: Vec<String> = Role::ALL
        .iter()
        .map(|r| format!("`{}`", r.attr()))
        .collect();
    cx.error_spanned_by(
        attr,
        format!(
            "unknown parameter attribute `#[{name}]`: roles are {}{hint}",
            roles.join(", ")
        ),
    );
    Mark::Role(meant)
}
