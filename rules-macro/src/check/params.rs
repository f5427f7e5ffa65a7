//! The checks of the parameters without a buffer role on copy and region rules: which one is the
//! stream, and that no other can silently change what the primitive writes.
//!
//! The generated rules do the shadow work over the box the roles describe (the whole buffer, or
//! the rows and runs of `#[width]`, `#[len]`, `#[dst_offset]`, ...). An unmarked `start: usize`
//! beside a buffer may move that box inside the primitive, where the rule cannot see it: the
//! derivative would be wrong with no error. So each parameter has a role, is recognised by its
//! type (a stream, a label), or is refused with the choices named; what the macro cannot judge
//! from the tokens (an alias, a type of the user's) is the stream, and the compiler checks that
//! its type is one (`AsStream`), or the user says `#[inert]`.

use super::buffers::len_candidate;
use crate::ctxt::Ctxt;
use crate::model::{Kind, Role};
use crate::parse::{Param, Rule};
use crate::text::type_str;
use crate::types::{ELEMENT_VALUE, ParamClass, classify, find_impl_trait, show};
use syn::Type;

/// The stream orders the shadow work after the primal copy: the one marked `#[stream]`, or else
/// the one unmarked parameter that can be a stream (a `CudaStream` by its name, or a reference
/// to a type the macro cannot read: an alias, a newtype, a struct of the user's implementing
/// `AsStream`, which the generated code's bound then checks). Two such parameters are an error
/// asking for `#[stream]`: a guessed stream races with the copy.
pub fn check_stream(cx: &Ctxt, rule: &Rule) -> Option<usize> {
    let marked = rule.with_role(Role::Stream);
    for &i in marked.iter().skip(1) {
        cx.error_spanned_by(
            rule.params[i].role_tokens(),
            "`#[stream]` is given twice: a copy runs on one stream; keep the mark on that one",
        );
    }
    if let Some(&i) = marked.first() {
        check_stream_by_reference(cx, &rule.params[i]);
        return Some(i);
    }
    let candidates: Vec<usize> = (0..rule.params.len())
        .filter(|&i| may_be_stream(&rule.params[i]))
        .collect();
    if let [first, rest @ ..] = candidates.as_slice() {
        let all_named = candidates
            .iter()
            .all(|&i| classify(&rule.params[i].ty) == ParamClass::Stream);
        for &i in rest {
            let msg = if all_named {
                "several parameters are CUDA streams: mark the one the copy runs on with `#[stream]`".to_string()
            } else {
                format!(
                    "`{}` and `{}` could each be the stream the copy runs on (a reference to a type the macro cannot read is taken for the stream): mark the stream `#[stream]`, and each other parameter with its role or `#[inert]`",
                    rule.params[*first].name, rule.params[i].name
                )
            };
            cx.error_spanned_by(&rule.params[i].tokens, msg);
        }
        check_stream_by_reference(cx, &rule.params[*first]);
    }
    candidates.first().copied()
}

/// Whether an unmarked parameter can be the stream: one whose type says so, or a reference to a
/// type the macro cannot read (the rule borrows the stream for its shadow work: a stream held by
/// value is named by its type). A configured-out parameter cannot order every configuration.
fn may_be_stream(p: &Param) -> bool {
    if p.role.is_some() || p.receiver || !p.cfg.is_empty() {
        return false;
    }
    match classify(&p.ty) {
        ParamClass::Stream => true,
        ParamClass::Unknown => match &p.ty {
            Type::Reference(r) => could_name_stream(&r.elem),
            _ => false,
        },
        ParamClass::Inert | ParamClass::Scalar(_) => false,
    }
}

/// Containers whose look says they are not a stream (a scratch buffer, a log): refused unless
/// marked, but never taken for the stream.
const NOT_STREAMS: &[&str] = &[
    "Vec", "VecDeque", "Box", "Option", "HashMap", "BTreeMap", "HashSet", "BTreeSet", "Cell",
    "RefCell", "Mutex", "RwLock",
];

/// Whether a referenced type could be a stream the macro cannot read: a path (an alias, a
/// newtype, a struct of the user's, a generic), not a slice, an array, a tuple or a container.
fn could_name_stream(ty: &Type) -> bool {
    match ty {
        Type::Paren(p) => could_name_stream(&p.elem),
        Type::Group(g) => could_name_stream(&g.elem),
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| !NOT_STREAMS.contains(&s.ident.to_string().as_str())),
        Type::TraitObject(_) => true,
        _ => false,
    }
}

/// The rule's shadow work borrows the stream for as long as the rule object lives; one taken by
/// value is moved into each call of the primitive.
fn check_stream_by_reference(cx: &Ctxt, p: &Param) {
    if !matches!(p.ty, Type::Reference(_)) {
        cx.error_spanned_by(
            &p.ty,
            format!(
                "the stream is borrowed by the rule's shadow work: take it by reference, `{}: &{}`",
                p.name,
                show(&p.ty)
            ),
        );
    }
}

/// Every parameter of a copy or region rule without a role is the stream, a label or a context
/// by its type, or marked `#[inert]`; anything that may choose which elements the primitive
/// writes, or what it writes there, is refused at the parameter with the ways to say what it is.
/// `stream` is the parameter [`check_stream`] chose.
pub fn check_params(cx: &Ctxt, rule: &Rule, kind: Kind, stream: Option<usize>) {
    // Without a `#[stream]`, several candidates were reported once each by `check_stream`.
    let several_streams = rule.with_role(Role::Stream).is_empty()
        && (0..rule.params.len())
            .filter(|&i| may_be_stream(&rule.params[i]))
            .count()
            > 1;
    let reported_len = len_candidate(rule);
    // A missing buffer role or fill value is reported at the parameter that could take it (or
    // at the function); a buffer or value left unmarked there is that same problem.
    let missing_buffer = !rule.dropped_roles.is_empty()
        || (kind.has_dst() && rule.with_role(Role::Dst).is_empty())
        || (kind.is_pitched() || kind == Kind::Copy) && rule.with_role(Role::Src).is_empty();
    let missing_value = kind == Kind::Fill && rule.with_role(Role::Value).is_empty();
    for (i, p) in rule.params.iter().enumerate() {
        if p.role.is_some() || p.receiver || Some(i) == stream || Some(i) == reported_len {
            continue;
        }
        // `impl Trait` is refused as such (`check_impl_trait`).
        if find_impl_trait(&p.ty).is_some() {
            continue;
        }
        let buffer = matches!(p.ty, Type::Reference(_) | Type::Ptr(_));
        match classify(&p.ty) {
            ParamClass::Stream | ParamClass::Inert => {}
            ParamClass::Scalar(ELEMENT_VALUE) if buffer && missing_buffer => {}
            ParamClass::Scalar(ELEMENT_VALUE) if !buffer && missing_value => {}
            ParamClass::Scalar(what) => {
                cx.error_spanned_by(&p.tokens, scalar_message(rule, kind, p, what));
            }
            ParamClass::Unknown if may_be_stream(p) && several_streams => {}
            ParamClass::Unknown => cx.error_spanned_by(&p.tokens, unknown_message(rule, kind, p)),
        }
    }
}

/// The parameter as the user wrote it (a pattern included), without its attributes.
fn shown(p: &Param) -> String {
    let tokens = p.tokens.clone().into_iter().skip_while(|t| {
        matches!(t, proc_macro2::TokenTree::Punct(x) if x.as_char() == '#')
            || matches!(t, proc_macro2::TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Bracket)
    });
    type_str(&tokens.collect())
}

/// Whether the rule's buffers are raw pointers (the destination's type says it).
fn is_pointer_rule(rule: &Rule) -> bool {
    rule.with_role(Role::Dst)
        .first()
        .is_some_and(|&i| matches!(rule.params[i].ty, Type::Ptr(_)))
}

/// What the rule takes as its box, for the advice: the roles that would say what the parameter
/// says.
fn box_roles(rule: &Rule, kind: Kind) -> &'static str {
    let pointer = is_pointer_rule(rule);
    match kind {
        Kind::Copy2d | Kind::Copy3d => {
            "mark it with the role it plays (`#[width]`, `#[height]`, `#[depth]`, a pitch or slice height, an array origin such as `#[dst_x]`), or offset the buffers at the call"
        }
        Kind::Memset | Kind::Fill if pointer => {
            "mark it with the role it plays (`#[len]` for a run, or `#[width]`, `#[height]` and `#[dst_pitch]` for rows), or offset the pointer at the call"
        }
        Kind::Memset | Kind::Fill => {
            "slice the buffer at the call (`&mut buf[start..start + n]`, `buf.slice_mut(start..start + n)`) and drop the parameter, or give the rule rows (`#[width]`, `#[height]`, `#[dst_pitch]`)"
        }
        _ if pointer => {
            "mark it with the role it plays (`#[len]`, `#[dst_offset]`, `#[src_offset]`)"
        }
        _ => {
            "slice the buffers at the call (`&mut dst[start..start + n]`, `dst.slice_mut(start..start + n)`) and drop the parameter, or take the pointer form (`*mut T` with `#[dst_offset]`, `#[src_offset]`, `#[len]`)"
        }
    }
}

/// The refusal of an integer, flag, range or element value without a role.
fn scalar_message(rule: &Rule, kind: Kind, p: &Param, what: &str) -> String {
    let param = format!("`{}`", shown(p));
    let noun = kind.noun();
    if what == ELEMENT_VALUE && matches!(p.ty, Type::Reference(_) | Type::Ptr(_)) {
        return format!(
            "{param} is a buffer beside {noun}'s own: if the primitive reads it into `#[dst]` or writes it, the rule cannot see that, and its derivative would be wrong with no error. Give it its role (`#[dst]`, `#[src]`{}), or, if it is scratch memory that changes neither which elements are written nor their values, mark it `#[inert]`",
            if kind == Kind::Fill {
                ", a one-element `#[value]`"
            } else {
                ""
            }
        );
    }
    if what == ELEMENT_VALUE {
        return match kind {
            Kind::Memset => format!(
                "{param} is a value of an element type on a memset, whose rule takes its value as a bit pattern with no derivative: to write a value of the element type, make the rule `#[derivative_rule(fill)]` and mark it `#[value]`; if it changes neither which elements are written nor their values, mark it `#[inert]`"
            ),
            _ => format!(
                "{param} may change what {noun} writes (a scale, a value added), which the rule cannot see: its derivative would be wrong with no error. If it changes neither which elements are written nor their values, mark it `#[inert]`{}; otherwise the primitive is not {noun}",
                if kind == Kind::Fill {
                    " (the fill's own value is `#[value]`)"
                } else {
                    ""
                }
            ),
        };
    }
    let pattern = if kind == Kind::Memset && what == "an integer" {
        "; if it is the memset's bit pattern, mark it `#[value]`"
    } else {
        ""
    };
    format!(
        "{param} is or holds {what}, beside {noun}'s buffers: if it chooses which elements the primitive writes, the rule cannot see it, and its derivative would be wrong with no error. Then {}; if it changes neither which elements are written nor their values, mark it `#[inert]`{pattern}",
        box_roles(rule, kind)
    )
}

/// The refusal of a parameter whose type the macro cannot read and which is not the stream.
fn unknown_message(rule: &Rule, kind: Kind, p: &Param) -> String {
    let stream = if matches!(p.ty, Type::Reference(_)) {
        "if the copy runs on it, mark it `#[stream]` (its type must implement `rules_runtime::ops::AsStream`)".to_string()
    } else {
        format!(
            "if the copy runs on it, take it by reference (`{}: &{}`) and implement `rules_runtime::ops::AsStream` for its type",
            p.name,
            show(&p.ty)
        )
    };
    format!(
        "the macro cannot tell what `{}` is to {}: {stream}; if it changes neither which elements are written nor their values, mark it `#[inert]`; if it chooses which elements are written, {}",
        shown(p),
        kind.noun(),
        box_roles(rule, kind)
    )
}
