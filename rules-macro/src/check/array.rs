//! The checks of rules on CUDA arrays (`&mut CudaArray<T>` / `&CudaArray<T>` on either side): an
//! array's layout is its own, so its box is placed by an origin (`#[dst_x]`, `#[dst_y]`,
//! `#[dst_z]`, or the source's), never by a pitch; its shadow work runs on a stream.

use super::buffers::check_extent;
use crate::ctxt::Ctxt;
use crate::model::{COPY2D, COPY3D, Kind, Role};
use crate::parse::Rule;
use crate::plan::Region;
use crate::types::{is_array_type, show};

/// Which sides are CUDA arrays, by the types of the parameters marked `#[dst]` and `#[src]`.
pub fn array_sides(rule: &Rule) -> (bool, bool) {
    let side = |role: Role| {
        rule.with_role(role)
            .first()
            .is_some_and(|&i| is_array_type(&rule.params[i].ty))
    };
    (side(Role::Dst), side(Role::Src))
}

/// The origin roles, read into `r` (each one `usize` at most once), and the rules of their use:
/// a box in an array starts at an origin the rule must name (the primitive's `srcXInBytes`,
/// `srcY`, `srcZ`), and a linear side or a whole-buffer `copy` has none to name. An array's pitch
/// and slice height are its own: a pitch role on an array side is refused (it is not required,
/// see [`super::region`]).
pub fn check_origins(cx: &Ctxt, rule: &Rule, kind: Kind, r: &mut Region) {
    let (da, sa) = array_sides(rule);
    r.dst_array = da;
    r.src_array = sa;
    for &role in Role::ORIGINS {
        let Some((dst, axis)) = role.origin() else {
            continue;
        };
        let at = check_extent(cx, rule, role);
        if dst {
            r.dst_origin[axis] = at;
        } else {
            r.src_origin[axis] = at;
        }
    }
    if kind == Kind::Copy || kind.is_collective() {
        if kind == Kind::Copy {
            refuse_origins_on_copy(cx, rule);
        }
        return;
    }
    for (dst, array) in [(true, da), (false, sa)] {
        if dst && !kind.has_dst() || !dst && !kind.has_src() {
            continue;
        }
        if array {
            check_array_side(cx, rule, kind, dst);
        } else {
            refuse_origins_on_linear(cx, rule, dst);
        }
    }
}

/// On an array side: no pitch or slice height (the array's own), the origin's axes the box
/// has (x and y; z for 3-D copies), and no z on a 2-D box.
fn check_array_side(cx: &Ctxt, rule: &Rule, kind: Kind, dst: bool) {
    let (name, pitch, slice) = if dst {
        ("dst", Role::DstPitch, Role::DstSliceHeight)
    } else {
        ("src", Role::SrcPitch, Role::SrcSliceHeight)
    };
    let (x, y, z) = (
        Role::origin_of(dst, 0),
        Role::origin_of(dst, 1),
        Role::origin_of(dst, 2),
    );
    for (role, what) in [(pitch, "pitch"), (slice, "slice height")] {
        for i in rule.with_role(role) {
            cx.error_spanned_by(
                rule.params[i].role_tokens(),
                format!(
                    "`#[{name}]` is a CUDA array, whose layout fixes its {what}: remove `{}` (the box's place in the array is `{}`, `{}`{})",
                    role.attr(),
                    x.attr(),
                    y.attr(),
                    if kind == Kind::Copy3d {
                        format!(", `{}`", z.attr())
                    } else {
                        String::new()
                    }
                ),
            );
        }
    }
    if kind != Kind::Copy3d {
        for i in rule.with_role(z) {
            cx.error_spanned_by(
                rule.params[i].role_tokens(),
                format!(
                    "`{}` is for 3-D copies: make the rule `#[derivative_rule({COPY3D})]`, or remove it ({} places its box by `{}` and `{}`)",
                    z.attr(),
                    kind.noun(),
                    x.attr(),
                    y.attr()
                ),
            );
        }
    }
    let mut needed = vec![x, y];
    if kind == Kind::Copy3d {
        needed.push(z);
    }
    // A memset or a fill of a whole array names no box; rows of it name their origin.
    let rows = [Role::Width, Role::Height, x, y];
    if !kind.is_pitched() && rows.iter().all(|&role| rule.with_role(role).is_empty()) {
        return;
    }
    for role in needed {
        if rule.with_role(role).is_empty() && !rule.dropped_roles.contains(&role) {
            cx.error_spanned_by(
                &rule.func.sig.ident,
                format!(
                    "`#[{name}]` is a CUDA array: {} needs its {}: add a parameter marked `{}`, e.g. `{} {}: usize`{}",
                    kind.noun(),
                    role.noun(),
                    role.attr(),
                    role.attr(),
                    role.name(),
                    if role.origin() == Some((dst, 0)) {
                        format!(" (in elements: `cuMemcpy3D`'s `{name}XInBytes` is that times the element size)")
                    } else {
                        String::new()
                    },
                ),
            );
        }
    }
}

/// An origin places a box in an array; on linear memory it would be passed through while the
/// derivative is taken at the buffer's start.
fn refuse_origins_on_linear(cx: &Ctxt, rule: &Rule, dst: bool) {
    let name = if dst { "dst" } else { "src" };
    let role = if dst { Role::Dst } else { Role::Src };
    let ty = rule
        .with_role(role)
        .first()
        .map(|&i| show(&rule.params[i].ty))
        .unwrap_or_default();
    for axis in 0..3 {
        let o = Role::origin_of(dst, axis);
        for i in rule.with_role(o) {
            cx.error_spanned_by(
                rule.params[i].role_tokens(),
                format!(
                    "`{}` places a box in a CUDA array, but `#[{name}]` is `{ty}`, linear memory whose box starts where the buffer starts: remove it (slice the buffer at the call; if it is an array, name its type `CudaArray<T>`)",
                    o.attr()
                ),
            );
        }
    }
}

/// A `copy` moves whole buffers (a whole array); an origin would name a box it does not copy.
fn refuse_origins_on_copy(cx: &Ctxt, rule: &Rule) {
    for &o in Role::ORIGINS {
        for i in rule.with_role(o) {
            cx.error_spanned_by(
                rule.params[i].role_tokens(),
                format!(
                    "`{}` places a box in a CUDA array; a `copy` moves whole buffers (a whole array): for a box make the rule `#[derivative_rule({COPY2D})]` or `{COPY3D}`, or remove it",
                    o.attr()
                ),
            );
        }
    }
}

/// An array's shadow work is staged by box copies on a stream; without one the rules could only
/// fail at run time (`Error::NoStream`).
pub fn check_array_stream(cx: &Ctxt, rule: &Rule, r: &Region, stream: Option<usize>) {
    if stream.is_none() && r.has_array() {
        cx.error_spanned_by(
            &rule.func.sig.ident,
            "a rule on a CUDA array needs the stream its copy runs on: add a `&CudaStream` parameter (or mark one with `#[stream]`); an array's shadow work is staged by copies on that stream",
        );
    }
}
