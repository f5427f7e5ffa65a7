//! The checks of collective rules (`broadcast`, `reduce`, `all_gather`, `reduce_scatter`,
//! `all_reduce`, `send`, `recv`, `send_recv`): the buffers each kind has, the communicator, the
//! ranks each kind needs (and only those), buffers that NCCL can move. Each `check_*` says why.

use super::buffers::{check_by_value, check_elements};
use super::{check_one_role, unmarked};
use crate::ctxt::Ctxt;
use crate::model::{Kind, Role};
use crate::parse::{Param, Rule};
use crate::plan::{Access, Buffer, Order, Plan, Region};
use crate::text::one_of;
use crate::types::{elem_name, element_of, host_container_elem, is_comm_type, show};
use syn::Type;

/// Runs the checks of a collective rule; returns its plan when its own checks passed.
pub fn check_collective(cx: &Ctxt, rule: &Rule, kind: Kind) -> Option<Plan> {
    let dst = check_buffer_role(cx, rule, kind, Role::Dst);
    let src = check_buffer_role(cx, rule, kind, Role::Src);
    let comm = check_comm(cx, rule);
    let ranks = check_ranks(cx, rule, kind);
    check_copy_roles(cx, rule);
    check_memory_kind_args(cx, rule);
    let buffer = |i: usize, role| {
        Some(Buffer {
            param: i,
            ty: check_buffer_type(cx, &rule.params[i], role)?,
        })
    };
    let dst = dst.and_then(|i| buffer(i, Role::Dst));
    let src = src.and_then(|i| buffer(i, Role::Src));
    check_collective_elements(
        cx,
        dst.as_ref().and_then(|b| element_of(&b.ty)),
        src.as_ref().and_then(|b| element_of(&b.ty)),
    );
    Some(Plan {
        kind,
        dst,
        src,
        access: Access::Slice,
        order: Order::Comm {
            comm: comm?,
            ranks: ranks?,
        },
        unsafety: rule.is_unsafe(),
        value: None,
        region: Region::default(),
        restore: false,
    })
}

/// A collective has an output (`#[dst]`) unless it is `send`, and an input (`#[src]`) unless it
/// is `recv`: exactly one of each it has, none of what it has not (a `send` writes nothing here;
/// its output is the peer's `recv`).
fn check_buffer_role(cx: &Ctxt, rule: &Rule, kind: Kind, role: Role) -> Option<usize> {
    let has = if role == Role::Dst {
        kind.has_dst()
    } else {
        kind.has_src()
    };
    if has {
        return check_one_role(cx, rule, role);
    }
    let (what, other) = if role == Role::Dst {
        (
            "sends `#[src]` to `#[peer]`; the peer receives it with a `recv` rule",
            "destination",
        )
    } else {
        (
            "receives `#[dst]` from `#[peer]`; the peer sends it with a `send` rule",
            "source",
        )
    };
    for &i in &rule.with_role(role) {
        cx.error_spanned_by(
            rule.params[i].role_tokens(),
            format!(
                "{} has no {other}: it {what} (or use `send_recv` for both); remove `{}`",
                rule.kind_noun(),
                role.attr()
            ),
        );
    }
    None
}

/// The rules run every shadow collective on the communicator the primal uses: one, marked
/// `#[comm]` or found by its type (`Comm`, `Arc<Comm>`, `Rc<Comm>`, or a reference).
fn check_comm(cx: &Ctxt, rule: &Rule) -> Option<usize> {
    let marked = rule.with_role(Role::Comm);
    for &i in marked.iter().skip(1) {
        cx.error_spanned_by(
            rule.params[i].role_tokens(),
            "`#[comm]` is given twice: a collective runs on one communicator; keep the mark on that one",
        );
    }
    if let Some(&i) = marked.first() {
        return Some(i);
    }
    let by_type = unmarked(rule, is_comm_type);
    match by_type.as_slice() {
        [] => {
            cx.error_spanned_by(
                &rule.func.sig.ident,
                format!(
                    "{} needs the NCCL communicator it runs on: add a parameter `comm: &Comm` (`cudarc::nccl::Comm`), or mark yours with `#[comm]`",
                    rule.kind_noun()
                ),
            );
            None
        }
        [i] => Some(*i),
        [_, second, ..] => {
            cx.error_spanned_by(
                &rule.params[*second].tokens,
                "several parameters are NCCL communicators: mark the one the collective runs on with `#[comm]`",
            );
            None
        }
    }
}

/// A broadcast or reduce needs its root, a send or recv its peer, a send_recv both of its peers:
/// the adjoint collective goes back through the same ranks. A rank a kind does not have is an
/// error, not silently ignored.
fn check_ranks(cx: &Ctxt, rule: &Rule, kind: Kind) -> Option<Vec<usize>> {
    let mut found = Vec::new();
    let mut complete = true;
    for &role in Role::RANKS {
        let marked = rule.with_role(role);
        if !kind.ranks().contains(&role) {
            for &i in &marked {
                cx.error_spanned_by(
                    rule.params[i].role_tokens(),
                    format!(
                        "{} has no {}: remove `{}` (it belongs to {} rules)",
                        rule.kind_noun(),
                        role.noun(),
                        role.attr(),
                        one_of(&Kind::with_rank(role))
                    ),
                );
            }
            continue;
        }
        for &i in marked.iter().skip(1) {
            cx.error_spanned_by(
                rule.params[i].role_tokens(),
                format!(
                    "`{a}` is given twice: {r} has one {n}; keep one",
                    a = role.attr(),
                    r = rule.kind_noun(),
                    n = role.noun()
                ),
            );
        }
        match marked.first() {
            Some(&i) => found.push(i),
            None => {
                complete = false;
                missing_rank(cx, rule, role);
            }
        }
    }
    complete.then_some(found)
}

/// The error for a missing rank role, at the parameter that is most likely meant.
fn missing_rank(cx: &Ctxt, rule: &Rule, role: Role) {
    let name = role.name();
    let likely = rule
        .params
        .iter()
        .find(|p| p.role.is_none() && !p.receiver && p.name == name);
    match likely {
        Some(p) => cx.error_spanned_by(
            &p.tokens,
            format!(
                "{} needs its {}: if `{n}` is that rank, write `{} {n}: {}`",
                rule.kind_noun(),
                role.noun(),
                role.attr(),
                show(&p.ty),
                n = p.name,
            ),
        ),
        None => cx.error_spanned_by(
            &rule.func.sig.ident,
            format!(
                "{} needs its {}: add an integer parameter marked `{a}`, e.g. `{a} {name}: usize`",
                rule.kind_noun(),
                role.noun(),
                a = role.attr(),
            ),
        ),
    }
}

/// Lengths, offsets and streams belong to copies: a collective moves whole buffers (slice them at
/// the call), and runs on its communicator's stream, not on one the rule could be given.
fn check_copy_roles(cx: &Ctxt, rule: &Rule) {
    for p in &rule.params {
        let Some(mark) = &p.role else { continue };
        let msg = match mark.role {
            Role::Len | Role::DstOffset | Role::SrcOffset => format!(
                "`{}` is for raw-pointer copy rules; a collective moves whole buffers: remove it, and pass a view (`buf.slice(a..b)`) instead",
                mark.role.attr()
            ),
            Role::Stream => "a collective runs on its communicator's stream: remove `#[stream]` (the generated rules order their work on `comm.stream()`)".to_string(),
            r if Role::EXTENTS.contains(&r) || Role::ORIGINS.contains(&r) || r == Role::Value => format!(
                "`{}` belongs to region rules (`memset`, `fill`, `copy2d`, `copy3d`); a collective moves whole buffers: remove it, and pass a view (`buf.slice(a..b)`) instead",
                mark.role.attr()
            ),
            _ => continue,
        };
        cx.error_spanned_by(&mark.attr, msg);
    }
}

/// `dst = kind` / `src = kind` declare where raw pointers point; collective buffers are cudarc
/// device buffers, whose types say it.
fn check_memory_kind_args(cx: &Ctxt, rule: &Rule) {
    for (name, kind) in [("dst", &rule.args.dst_kind), ("src", &rule.args.src_kind)] {
        if let Some((_, at)) = kind {
            cx.error_spanned_by(
                at,
                format!(
                    "`{name} = ...` declares where a raw pointer points, but a collective's buffers are cudarc device buffers, whose types say where they live: remove `{name} = ...`"
                ),
            );
        }
    }
}

/// NCCL is called through cudarc's `Comm`, which takes cudarc device buffers: so a collective's
/// buffers are references (`&mut` for the output, `&` for the input) to device memory; host
/// memory and raw pointers cannot go through it. Returns the pointee type.
fn check_buffer_type(cx: &Ctxt, p: &Param, role: Role) -> Option<Type> {
    let r = match &p.ty {
        Type::Reference(r) => r,
        Type::Ptr(ptr) => {
            cx.error_spanned_by(
                &p.ty,
                format!(
                    "collective rules take cudarc device buffers by reference, not raw pointers: write `{}CudaSlice<{}>` (NCCL is called through cudarc's `Comm`, which needs each buffer's stream)",
                    if role == Role::Dst { "&mut " } else { "&" },
                    show(&ptr.elem)
                ),
            );
            return None;
        }
        _ => {
            check_by_value(cx, p, role);
            return None;
        }
    };
    let elem = show(element_of(&r.elem).unwrap_or(&r.elem));
    match (role, r.mutability.is_some()) {
        (Role::Dst, false) => cx.error_spanned_by(
            &p.ty,
            format!(
                "the destination must be mutable: write `&mut {}`",
                show(&r.elem)
            ),
        ),
        (Role::Src, true) => cx.error_spanned_by(
            &p.ty,
            format!(
                "the source is only read: take it by shared reference, `&{}`",
                show(&r.elem)
            ),
        ),
        _ => {}
    }
    if host_container_elem(&r.elem).is_some() {
        cx.error_spanned_by(
            &r.elem,
            format!(
                "`{}` is host memory, and NCCL moves device memory: use a cudarc device buffer, e.g. `{}CudaSlice<{elem}>`",
                show(&r.elem),
                if role == Role::Dst { "&mut " } else { "&" },
            ),
        );
        return None;
    }
    Some((*r.elem).clone())
}

/// The elements must carry a derivative (as for copies) and be summable by NCCL, which has no
/// complex type: refused here rather than by a trait error later.
fn check_collective_elements(cx: &Ctxt, dst: Option<&Type>, src: Option<&Type>) {
    check_elements(cx, dst, src);
    for t in [dst, src].into_iter().flatten() {
        if elem_name(t).is_some_and(|n| n.starts_with("Complex<")) {
            cx.error_spanned_by(
                t,
                format!(
                    "`{}` cannot go through an NCCL collective: NCCL has no complex element type; collective rules take `f32`, `f64`, `f16` or `bf16` (move the real and imaginary parts as a real buffer of twice the length)",
                    show(t)
                ),
            );
            return;
        }
    }
}
