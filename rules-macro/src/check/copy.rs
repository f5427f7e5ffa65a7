//! The checks of copy rules: one destination and one source, a stream when device memory is
//! involved, no collective roles. The buffers' own rules are in [`super::buffers`].

use super::array::{check_array_stream, check_origins};
use super::buffers::check_buffers;
use super::check_one_role;
use super::params::{check_params, check_stream};
use crate::ctxt::Ctxt;
use crate::model::{Kind, MemKind, Role};
use crate::parse::Rule;
use crate::plan::{Access, Buffer, Order, Plan, Region};
use crate::text::one_of;

/// Runs the checks of a copy rule; returns its plan when its own checks passed.
pub fn check_copy(cx: &Ctxt, rule: &Rule) -> Option<Plan> {
    let dst = check_one_role(cx, rule, Role::Dst);
    let src = check_one_role(cx, rule, Role::Src);
    let stream = check_stream(cx, rule);
    check_params(cx, rule, Kind::Copy, stream);
    let buffers = match (dst, src) {
        (Some(dst), Some(src)) => check_buffers(cx, rule, dst, src),
        _ => None,
    };
    if let Some((Access::Pointer(e), _, _)) = &buffers {
        check_device_pointer_stream(cx, rule, e.dst_kind, e.src_kind, stream);
    }
    check_collective_roles_on_copy(cx, rule);
    check_region_roles_on_copy(cx, rule);
    let mut region = Region::default();
    check_origins(cx, rule, Kind::Copy, &mut region);
    check_array_stream(cx, rule, &region, stream);
    let (access, dst_ty, src_ty) = buffers?;
    let unsafety = rule.is_unsafe() || matches!(access, Access::Pointer(_));
    Some(Plan {
        kind: Kind::Copy,
        dst: Some(Buffer {
            param: dst?,
            ty: dst_ty,
        }),
        src: Some(Buffer {
            param: src?,
            ty: src_ty,
        }),
        access,
        order: Order::Stream(stream),
        unsafety,
        value: None,
        region,
        restore: rule.args.restore.is_some(),
    })
}

/// Rows, pitches and a value belong to region rules; on a copy they would be passed through, and
/// the copy's derivative would be taken over the whole range instead of the box.
fn check_region_roles_on_copy(cx: &Ctxt, rule: &Rule) {
    for p in &rule.params {
        let Some(mark) = &p.role else { continue };
        let msg = match mark.role {
            Role::Value => "`#[value]` belongs to `fill` rules; a copy takes its values from `#[src]`: remove it, or make the rule `#[derivative_rule(fill)]`".to_string(),
            Role::Depth | Role::DstSliceHeight | Role::SrcSliceHeight => format!(
                "`{}` belongs to 3-D pitched copies: make the rule `#[derivative_rule(copy3d)]`, or remove it",
                mark.role.attr()
            ),
            r if Role::EXTENTS.contains(&r) => format!(
                "`{}` belongs to pitched copies; a `copy` moves one run of elements: make the rule `#[derivative_rule(copy2d)]`, or remove it",
                mark.role.attr()
            ),
            _ => continue,
        };
        cx.error_spanned_by(&mark.attr, msg);
    }
}

/// The communicator and the ranks belong to collective rules; on a copy they would be silently
/// passed through, and the user would believe the copy is a collective.
pub(super) fn check_collective_roles_on_copy(cx: &Ctxt, rule: &Rule) {
    for p in &rule.params {
        let Some(mark) = &p.role else { continue };
        let kinds = match mark.role {
            Role::Comm => "`broadcast`, `reduce`, `all_gather`, `reduce_scatter`, `all_reduce`, `send`, `recv`, `send_recv`".to_string(),
            Role::Root | Role::Peer | Role::SendTo | Role::RecvFrom => {
                one_of(&Kind::with_rank(mark.role))
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

/// Device work must be ordered after the primal copy on its stream: a device pointer rule with no
/// stream could only guess one, and a guessed stream races with the copy.
pub(super) fn check_device_pointer_stream(
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
