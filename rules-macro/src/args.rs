//! Stage 1a: the attribute's arguments (`copy`, `key = value`). Read one comma-separated piece at
//! a time, so that a mistake in one argument does not hide the others; every problem is recorded
//! in the [`Ctxt`] at the token at fault, with what to write instead.

use crate::errors::{Ctxt, did_you_mean, one_of};
use crate::parse::Role;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Ident, Path};

/// The rule kinds the attribute knows.
pub const RULE_KINDS: &[&str] = &[
    COPY,
    BROADCAST,
    REDUCE,
    ALL_GATHER,
    REDUCE_SCATTER,
    ALL_REDUCE,
    SEND,
    RECV,
    SEND_RECV,
];
/// `#[derivative_rule(copy)]`: `dst ← src`, also between devices (a peer copy).
pub const COPY: &str = "copy";
/// `#[derivative_rule(broadcast)]`: NCCL broadcast from `#[root]`.
pub const BROADCAST: &str = "broadcast";
/// `#[derivative_rule(reduce)]`: NCCL reduce (sum) to `#[root]`.
pub const REDUCE: &str = "reduce";
/// `#[derivative_rule(all_gather)]`: NCCL all-gather.
pub const ALL_GATHER: &str = "all_gather";
/// `#[derivative_rule(reduce_scatter)]`: NCCL reduce-scatter (sum).
pub const REDUCE_SCATTER: &str = "reduce_scatter";
/// `#[derivative_rule(all_reduce)]`: NCCL all-reduce (sum).
pub const ALL_REDUCE: &str = "all_reduce";
/// `#[derivative_rule(send)]`: NCCL send to `#[peer]`.
pub const SEND: &str = "send";
/// `#[derivative_rule(recv)]`: NCCL receive from `#[peer]`.
pub const RECV: &str = "recv";
/// `#[derivative_rule(send_recv)]`: NCCL send to `#[send_to]` and receive from `#[recv_from]`.
pub const SEND_RECV: &str = "send_recv";
/// Future kinds, named so that the error can say they are not available yet.
pub const PLANNED_KINDS: &[&str] = &["memset", "fill", "copy2d", "copy3d"];
/// Other names for the kinds, as NCCL, MPI and other libraries spell them, with the advice.
const KIND_SYNONYMS: &[(&str, &str)] = &[
    ("bcast", "did you mean `broadcast`?"),
    ("allgather", "did you mean `all_gather`?"),
    ("allreduce", "did you mean `all_reduce`?"),
    ("reducescatter", "did you mean `reduce_scatter`?"),
    ("receive", "did you mean `recv`?"),
    ("sendrecv", "did you mean `send_recv`?"),
    (
        "peer_copy",
        "a copy between devices is a `copy` rule: write `#[derivative_rule(copy)]`; its reverse accumulates across devices",
    ),
];

/// The NCCL collectives the attribute knows, each with its forward and adjoint (DESIGN §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collective {
    /// `y ← x` of the root.
    Broadcast,
    /// `y (root) ← Σ x`.
    Reduce,
    /// `y ← [x of every rank]`.
    AllGather,
    /// `y ← chunk of Σ x`.
    ReduceScatter,
    /// `y ← Σ x`.
    AllReduce,
    /// `x` to a peer.
    Send,
    /// `y ←` from a peer.
    Recv,
    /// both, in one group.
    SendRecv,
}

impl Collective {
    /// The collective a kind names, if it names one.
    pub fn from_name(name: &str) -> Option<Collective> {
        Some(match name {
            BROADCAST => Collective::Broadcast,
            REDUCE => Collective::Reduce,
            ALL_GATHER => Collective::AllGather,
            REDUCE_SCATTER => Collective::ReduceScatter,
            ALL_REDUCE => Collective::AllReduce,
            SEND => Collective::Send,
            RECV => Collective::Recv,
            SEND_RECV => Collective::SendRecv,
            _ => return None,
        })
    }

    /// The kind as the attribute spells it (and as the runtime's constructor is named).
    pub fn name(self) -> &'static str {
        match self {
            Collective::Broadcast => BROADCAST,
            Collective::Reduce => REDUCE,
            Collective::AllGather => ALL_GATHER,
            Collective::ReduceScatter => REDUCE_SCATTER,
            Collective::AllReduce => ALL_REDUCE,
            Collective::Send => SEND,
            Collective::Recv => RECV,
            Collective::SendRecv => SEND_RECV,
        }
    }

    /// Whether the rule has an output buffer (`#[dst]`).
    pub fn has_dst(self) -> bool {
        self != Collective::Send
    }

    /// Whether the rule has an input buffer (`#[src]`).
    pub fn has_src(self) -> bool {
        self != Collective::Recv
    }

    /// The rank roles the rule takes, in the order the runtime's constructor takes them.
    pub fn ranks(self) -> &'static [Role] {
        match self {
            Collective::Broadcast | Collective::Reduce => &[Role::Root],
            Collective::Send | Collective::Recv => &[Role::Peer],
            Collective::SendRecv => &[Role::SendTo, Role::RecvFrom],
            _ => &[],
        }
    }

    /// The collective whose derivative rules are this one's adjoint, in words.
    pub fn adjoint(self) -> &'static str {
        match self {
            Collective::Broadcast => "reduce (sum) to the root",
            Collective::Reduce => "broadcast from the root",
            Collective::AllGather => "reduce-scatter (sum)",
            Collective::ReduceScatter => "all-gather",
            Collective::AllReduce => "all-reduce (sum), its own adjoint",
            Collective::Send => "receive from the peer, then accumulate",
            Collective::Recv => "send back to the peer, then zero",
            Collective::SendRecv => "send_recv with the two peers swapped, then accumulate",
        }
    }
}

/// The collectives whose rules have each rank role, for messages.
pub fn kinds_with(role: Role) -> Vec<&'static str> {
    [
        Collective::Broadcast,
        Collective::Reduce,
        Collective::Send,
        Collective::Recv,
        Collective::SendRecv,
    ]
    .into_iter()
    .filter(|c| c.ranks().contains(&role))
    .map(Collective::name)
    .collect()
}

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

/// `host`: pageable host memory.
pub const HOST: &str = "host";
/// `pinned`: page-locked host memory.
pub const PINNED: &str = "pinned";
/// `device`: device memory.
pub const DEVICE: &str = "device";
/// `unified`: unified (managed) memory.
pub const UNIFIED: &str = "unified";
/// Memory kinds a raw pointer can declare.
pub const MEMORY_KINDS: &[&str] = &[HOST, PINNED, DEVICE, UNIFIED];
/// Other names for the memory kinds, as CUDA and other libraries spell them.
const MEMORY_KIND_SYNONYMS: &[(&str, &str)] = &[
    ("cpu", HOST),
    ("pageable", HOST),
    ("gpu", DEVICE),
    ("cuda", DEVICE),
    ("page_locked", PINNED),
    ("locked", PINNED),
    ("managed", UNIFIED),
    ("shared", UNIFIED),
];

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

impl MemKind {
    fn from_name(name: &str) -> Option<MemKind> {
        Some(match name {
            HOST => MemKind::Host,
            PINNED => MemKind::Pinned,
            DEVICE => MemKind::Device,
            UNIFIED => MemKind::Unified,
            _ => return None,
        })
    }
}

/// A `dst = kind` / `src = kind` argument: the kind (`None` when it was misspelled, already
/// reported) and the tokens of the value, for errors.
pub type DeclaredKind = (Option<MemKind>, TokenStream);

/// The parsed attribute arguments.
#[derive(Default)]
pub struct RuleArgs {
    /// The rule kind as written (also when unknown, already reported, so nothing cascades).
    pub kind: Option<Ident>,
    /// Whether the attribute had no arguments at all (`#[derivative_rule]`).
    pub empty: bool,
    /// `crate = path`.
    pub krate: Option<Path>,
    /// `dst = kind`.
    pub dst_kind: Option<DeclaredKind>,
    /// `src = kind`.
    pub src_kind: Option<DeclaredKind>,
    /// `forward = name`.
    pub forward: Option<Ident>,
    /// `augmented_primal = name`.
    pub augmented_primal: Option<Ident>,
    /// `reverse = name`.
    pub reverse: Option<Ident>,
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
        Some(TokenTree::Group(g)) if g.delimiter() != Delimiter::None => {
            let msg = if RULE_KINDS.contains(&name.as_str()) {
                args.kind.get_or_insert_with(|| key.clone());
                format!("`{name}` takes no arguments: write `#[derivative_rule({name})]`")
            } else if ARG_KEYS.contains(&name.as_str()) {
                format!("write `{name} = {}`, not `{name}(...)`", value_hint(&name))
            } else {
                format!(
                    "expected a rule kind (`copy`) or `key = value`, not `{name}(...)`{}",
                    did_you_mean(&name, &[RULE_KINDS, ARG_KEYS].concat())
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
            let all = [RULE_KINDS, ARG_KEYS].concat();
            let hint = if all.contains(&last.as_str()) {
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

/// A bare word: the rule kind (or a key whose value is missing).
fn parse_kind(cx: &Ctxt, args: &mut RuleArgs, ident: &Ident, name: &str) {
    if ARG_KEYS.contains(&name) {
        cx.error_spanned_by(
            ident,
            format!(
                "`{name}` needs a value: write `{name} = {}`",
                value_hint(name)
            ),
        );
    } else if let Some(first) = &args.kind {
        cx.error_spanned_by(
            ident,
            format!("a rule has one kind, and `{first}` was already given; remove this one"),
        );
    } else if RULE_KINDS.contains(&name) {
        args.kind = Some(ident.clone());
    } else if let Some((_, advice)) = KIND_SYNONYMS.iter().find(|(k, _)| *k == name) {
        cx.error_spanned_by(ident, format!("unknown rule kind `{name}`: {advice}"));
        args.kind = Some(ident.clone());
    } else if PLANNED_KINDS.contains(&name) {
        cx.error_spanned_by(
            ident,
            format!(
                "the rule kind `{name}` is not supported yet; supported kinds: {}",
                one_of(RULE_KINDS)
            ),
        );
        args.kind = Some(ident.clone());
    } else {
        cx.error_spanned_by(
            ident,
            format!(
                "unknown rule kind `{name}`: supported kinds: {}{}",
                one_of(RULE_KINDS),
                did_you_mean(name, RULE_KINDS)
            ),
        );
        args.kind = Some(ident.clone());
    }
}

/// What to write after `key =`, for messages.
fn value_hint(key: &str) -> &'static str {
    match key {
        CRATE => "::rules_runtime",
        DST | SRC => "host` (or `pinned`, `device`, `unified`",
        FORWARD | AUGMENTED_PRIMAL | REVERSE => "name",
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
        FORWARD | AUGMENTED_PRIMAL | REVERSE => {
            let slot = match name {
                FORWARD => &mut args.forward,
                AUGMENTED_PRIMAL => &mut args.augmented_primal,
                _ => &mut args.reverse,
            };
            if let Some(ident) = parse_fn_name(cx, name, value) {
                set_once(cx, slot, ident, key, name);
            }
        }
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
