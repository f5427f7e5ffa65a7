//! Stage 1a: the attribute's arguments (`copy`, `in_impl`, `key = value`). Read one comma-separated piece at
//! a time, so that a mistake in one argument does not hide the others; every problem is recorded
//! in the [`Ctxt`] at the token at fault, with what to write instead.

use crate::ctxt::Ctxt;
use crate::model::{
    ARG_KEYS, AUTODIFF, CRATE, DST, FLAGS, IN_IMPL, KIND_SYNONYMS, Kind, MEMORY_KIND_SYNONYMS,
    MEMORY_KINDS, MemKind, OLD_NAME_KEYS, RESTORE, RULE, Role, SRC,
};
use crate::text::{did_you_mean, one_of};
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Ident, Path};

/// A `dst = kind` / `src = kind` argument: the kind (`None` when it was misspelled, already
/// reported) and the tokens of the value, for errors.
pub type DeclaredKind = (Option<MemKind>, TokenStream);

/// The rule kind as written: the kind (`None` when unknown, already reported) and its word.
pub struct KindArg {
    /// The kind.
    pub kind: Option<Kind>,
    /// The word, for errors.
    pub ident: Ident,
}

/// The parsed attribute arguments.
#[derive(Default)]
pub struct RuleArgs {
    /// The rule kind as written (also when unknown, already reported, so nothing cascades).
    pub kind: Option<KindArg>,
    /// `in_impl`: the rule is an associated function, called as `Self::name`.
    pub in_impl: bool,
    /// `restore`: the word's tokens; the reverse writes the destination's old contents back.
    pub restore: Option<Ident>,
    /// Whether the attribute had no arguments at all (`#[derivative_rule]`).
    pub empty: bool,
    /// `crate = path`.
    pub krate: Option<Path>,
    /// `dst = kind`.
    pub dst_kind: Option<DeclaredKind>,
    /// `src = kind`.
    pub src_kind: Option<DeclaredKind>,
    /// `rule = name`.
    pub rule: Option<Ident>,
    /// `autodiff` or `autodiff(f32, f64)`: the std::autodiff bridges (`expand::autodiff`).
    pub autodiff: Option<AutodiffArg>,
}

/// The `autodiff` option as written.
pub struct AutodiffArg {
    /// The element types of a generic rule, `autodiff(f32, f64)`; `None` for the bare word.
    pub elems: Option<Vec<syn::Type>>,
    /// The tokens of the whole option, for errors.
    pub tokens: TokenStream,
}

/// Parses the attribute's arguments, recording every problem in `cx`. Arguments are read one
/// comma-separated piece at a time, so a mistake in one does not hide the others.
pub fn parse_args(cx: &Ctxt, attr: TokenStream) -> RuleArgs {
    let mut args = RuleArgs {
        empty: attr.is_empty(),
        ..RuleArgs::default()
    };
    let mut piece = Vec::new();
    for tt in attr {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                parse_arg(cx, &mut args, &std::mem::take(&mut piece));
            }
            _ => piece.push(tt),
        }
    }
    parse_arg(cx, &mut args, &piece);
    args
}

/// One argument: `copy`, or `key = value`.
fn parse_arg(cx: &Ctxt, args: &mut RuleArgs, tokens: &[TokenTree]) {
    let Some(first) = tokens.first() else {
        return; // trailing comma
    };
    let TokenTree::Ident(key) = first else {
        cx.error_spanned_by(
            tokens_of(tokens),
            "expected a rule kind (`copy`) or `key = value`",
        );
        return;
    };
    let name = key.to_string();
    match tokens.get(1) {
        None => parse_kind(cx, args, key, &name),
        Some(TokenTree::Punct(p)) if p.as_char() == '=' => {
            parse_key_value(cx, args, key, &name, &tokens[2..]);
        }
        Some(TokenTree::Group(g))
            if name == AUTODIFF && g.delimiter() == Delimiter::Parenthesis =>
        {
            let parser = syn::punctuated::Punctuated::<syn::Type, syn::Token![,]>::parse_terminated;
            match syn::parse::Parser::parse2(parser, g.stream()) {
                Ok(list) if !list.is_empty() && tokens.len() == 2 => {
                    let arg = AutodiffArg {
                        elems: Some(list.into_iter().collect()),
                        tokens: tokens_of(tokens),
                    };
                    set_once(cx, &mut args.autodiff, arg, key, &name);
                }
                _ => cx.error_spanned_by(
                    tokens_of(tokens),
                    "`autodiff(...)` takes the element types of a generic rule, e.g. `autodiff(f32, f64)`",
                ),
            }
        }
        Some(TokenTree::Group(g)) if g.delimiter() != Delimiter::None => {
            let msg = if let Some(kind) = Kind::from_name(&name) {
                args.kind.get_or_insert_with(|| KindArg {
                    kind: Some(kind),
                    ident: key.clone(),
                });
                format!("`{name}` takes no arguments: write `#[derivative_rule({name})]`")
            } else if ARG_KEYS.contains(&name.as_str()) {
                format!("write `{name} = {}`, not `{name}(...)`", value_hint(&name))
            } else {
                format!(
                    "expected a rule kind (`copy`) or `key = value`, not `{name}(...)`{}",
                    did_you_mean(&name, &[&Kind::supported(), ARG_KEYS].concat())
                )
            };
            cx.error_spanned_by(tokens_of(tokens), msg);
        }
        Some(TokenTree::Punct(p)) if p.as_char() == ':' => {
            // `rules_runtime::forward = f`: say which plain word to write.
            let last = tokens
                .iter()
                .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == '='))
                .filter_map(|t| match t {
                    TokenTree::Ident(i) => Some(i.to_string()),
                    _ => None,
                })
                .last()
                .unwrap_or_default();
            let all = [&Kind::supported(), ARG_KEYS].concat();
            let hint = if all.contains(&last.as_str()) || FLAGS.contains(&last.as_str()) {
                format!("write `{last}` alone")
            } else {
                format!("expected {}", one_of(&all))
            };
            cx.error_spanned_by(
                tokens_of(tokens),
                format!("arguments are plain names, not paths: {hint}"),
            );
        }
        Some(next) => {
            // `copy forward = f`: most likely a missing comma. Read the first word and go on.
            if !ARG_KEYS.contains(&name.as_str()) {
                parse_kind(cx, args, key, &name);
            }
            cx.error_spanned_by(
                next,
                format!("expected `,` after `{name}`: separate the arguments with commas"),
            );
            if let TokenTree::Ident(_) = next {
                parse_arg(cx, args, &tokens[1..]);
            }
        }
    }
}

/// A bare word: the rule kind, a flag (or a key whose value is missing). Planned kinds are
/// read as kinds: refusing them is a check.
fn parse_kind(cx: &Ctxt, args: &mut RuleArgs, ident: &Ident, name: &str) {
    let supported = Kind::supported();
    let kind = Kind::from_name(name);
    if ARG_KEYS.contains(&name) {
        cx.error_spanned_by(
            ident,
            format!(
                "`{name}` needs a value: write `{name} = {}`",
                value_hint(name)
            ),
        );
        return;
    }
    if OLD_NAME_KEYS.contains(&name) {
        cx.error_spanned_by(ident, old_name_key(name));
        return;
    }
    if name == RESTORE {
        if args.restore.is_some() {
            cx.error_spanned_by(ident, format!("`{name}` is given twice; keep one"));
        }
        args.restore = Some(ident.clone());
        return;
    }
    if name == AUTODIFF {
        let arg = AutodiffArg {
            elems: None,
            tokens: ident.to_token_stream(),
        };
        set_once(cx, &mut args.autodiff, arg, ident, name);
        return;
    }
    if name == IN_IMPL {
        if args.in_impl {
            cx.error_spanned_by(ident, format!("`{name}` is given twice; keep one"));
        }
        args.in_impl = true;
        return;
    }
    if let Some(first) = &args.kind {
        cx.error_spanned_by(
            ident,
            format!(
                "a rule has one kind, and `{}` was already given; remove this one",
                first.ident
            ),
        );
        return;
    }
    if kind.is_none() {
        let msg = match KIND_SYNONYMS.iter().find(|(k, _)| *k == name) {
            Some((_, advice)) => format!("unknown rule kind `{name}`: {advice}"),
            None => format!(
                "unknown rule kind `{name}`: supported kinds: {}{}",
                one_of(&supported),
                did_you_mean(name, &[&supported, FLAGS].concat())
            ),
        };
        cx.error_spanned_by(ident, msg);
    }
    args.kind = Some(KindArg {
        kind,
        ident: ident.clone(),
    });
}

/// The message for a key of an earlier version (`forward = name` and the like).
fn old_name_key(name: &str) -> String {
    format!(
        "`{name} = ...` is gone: the forward rule, the augmented primal and the reverse rule are \
         methods of one generated item, `<function>_rule`; rename it with `rule = name`"
    )
}

/// What to write after `key =`, for messages.
fn value_hint(key: &str) -> &'static str {
    match key {
        CRATE => "::rules_runtime",
        DST | SRC => "host` (or `pinned`, `device`, `unified`",
        RULE => "name",
        _ => "...",
    }
}

/// `key = value`.
fn parse_key_value(cx: &Ctxt, args: &mut RuleArgs, key: &Ident, name: &str, value: &[TokenTree]) {
    if value.is_empty() {
        cx.error_spanned_by(
            key,
            format!(
                "`{name} =` needs a value: write `{name} = {}`",
                value_hint(name)
            ),
        );
        return;
    }
    match name {
        CRATE => {
            if let Some(path) = parse_crate_path(cx, value) {
                set_once(cx, &mut args.krate, path, key, name);
            }
        }
        DST | SRC => {
            let kind = parse_memory_kind(cx, name, value);
            let slot = if name == DST {
                &mut args.dst_kind
            } else {
                &mut args.src_kind
            };
            set_once(cx, slot, (kind, tokens_of(value)), key, name);
        }
        RULE => {
            if let Some(ident) = parse_fn_name(cx, name, value) {
                set_once(cx, &mut args.rule, ident, key, name);
            }
        }
        _ if OLD_NAME_KEYS.contains(&name) => cx.error_spanned_by(key, old_name_key(name)),
        _ => {
            let hint = match Role::from_name(name) {
                Some(role) => format!(
                    "; the {} is a parameter of the function: mark it with `{}`",
                    role.noun(),
                    role.attr()
                ),
                None => did_you_mean(name, ARG_KEYS),
            };
            cx.error_spanned_by(
                key,
                format!(
                    "unknown argument `{name}`: expected {}{hint}",
                    one_of(ARG_KEYS)
                ),
            );
        }
    }
}

/// `crate = path` (or `crate = "path"`).
fn parse_crate_path(cx: &Ctxt, value: &[TokenTree]) -> Option<Path> {
    let tokens = tokens_of(value);
    let path = if let [TokenTree::Literal(_)] = value {
        syn::parse2::<syn::LitStr>(tokens.clone()).and_then(|s| s.parse::<Path>())
    } else {
        syn::parse::Parser::parse2(Path::parse_mod_style, tokens.clone())
    };
    if path.is_err() {
        cx.error_spanned_by(
            &tokens,
            "`crate` takes the path of the runtime crate, e.g. `crate = ::rules_runtime`, or the name you gave it in Cargo.toml",
        );
    }
    path.ok()
}

/// `dst = kind` / `src = kind`: `None` when the kind is not one the runtime knows (reported).
fn parse_memory_kind(cx: &Ctxt, name: &str, value: &[TokenTree]) -> Option<MemKind> {
    let tokens = tokens_of(value);
    if let [TokenTree::Ident(v)] = value {
        let v = v.to_string();
        let kind = MemKind::from_name(&v);
        if kind.is_none() {
            let hint = match MEMORY_KIND_SYNONYMS.iter().find(|(s, _)| *s == v) {
                Some((_, k)) => format!("; did you mean `{k}`?"),
                None => did_you_mean(&v, MEMORY_KINDS),
            };
            cx.error_spanned_by(
                &tokens,
                format!(
                    "unknown memory kind `{v}`: expected {}{hint}",
                    one_of(MEMORY_KINDS)
                ),
            );
        }
        return kind;
    }
    let msg = match unquote(value) {
        Some(s) if MemKind::from_name(&s).is_some() => {
            format!("write the memory kind without quotes: `{name} = {s}`")
        }
        _ => format!("`{name}` takes a memory kind: {}", one_of(MEMORY_KINDS)),
    };
    cx.error_spanned_by(&tokens, msg);
    None
}

/// `forward = name` and the like: a plain identifier.
fn parse_fn_name(cx: &Ctxt, name: &str, value: &[TokenTree]) -> Option<Ident> {
    if let [TokenTree::Ident(v)] = value
        && syn::parse2::<Ident>(v.to_token_stream()).is_ok()
    {
        return Some(v.clone());
    }
    let msg = match unquote(value) {
        Some(s) if syn::parse_str::<Ident>(&s).is_ok() => {
            format!("write the name without quotes: `{name} = {s}`")
        }
        _ => format!(
            "`{name}` takes the name of the generated function, e.g. `{name} = my_copy_{}`",
            name.trim_end_matches("_primal")
        ),
    };
    cx.error_spanned_by(tokens_of(value), msg);
    None
}

/// The contents of a single string literal, if `value` is one.
fn unquote(value: &[TokenTree]) -> Option<String> {
    if let [TokenTree::Literal(_)] = value {
        syn::parse2::<syn::LitStr>(tokens_of(value))
            .ok()
            .map(|s| s.value())
    } else {
        None
    }
}

fn tokens_of(tokens: &[TokenTree]) -> TokenStream {
    tokens.iter().cloned().collect()
}

fn set_once<T>(cx: &Ctxt, slot: &mut Option<T>, value: T, at: &Ident, name: &str) {
    if slot.is_some() {
        cx.error_spanned_by(at, format!("`{name}` is given twice; keep one"));
    } else {
        *slot = Some(value);
    }
}
