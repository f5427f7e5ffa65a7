//! Where raw pointers become views: the pointer activities of a pointer rule (its primals and
//! every lane's shadows) made into [`RawShadow`]s of the extent the call names, under the
//! caller's `unsafe` contract. The rule bodies (`crate::rules`) then work on these views only.

use super::RawShadow;
use crate::activity::{DstPtr, SrcPtr};
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::MemoryKind;
use crate::region::Pitched;
use crate::rules::{PtrCopy, RawRegion};

/// One lane of a pointer copy: the destination's and the source's shadow, where active.
pub(crate) type LaneViews<T> = (Option<RawShadow<T>>, Option<RawShadow<T>>);

/// The views of a pointer copy: each primal and each lane's shadows, `n` elements from their
/// offsets.
pub(crate) struct CopyViews<T> {
    pub(crate) dst: RawShadow<T>,
    pub(crate) src: RawShadow<T>,
    /// Per lane (the wider side's width).
    pub(crate) lanes: Vec<LaneViews<T>>,
}

/// The views of a pointer copy's arguments.
///
/// # Safety
/// Every pointer (primal and shadow) valid for `offset + n` elements of its side's declared kind,
/// as the raw copy rules' contract says.
pub(crate) unsafe fn copy_views<T, D, S>(shape: &PtrCopy, dst: &D, src: &S) -> Result<CopyViews<T>>
where
    T: Differentiable,
    D: DstPtr<T>,
    S: SrcPtr<T>,
{
    // SAFETY (each call): by this function's contract.
    let raw = |kind, p: *mut T, off, what| unsafe { RawShadow::new(kind, p, off, shape.n, what) };
    let d = raw(
        shape.dst_kind,
        dst.primal(),
        shape.dst_offset,
        "the primal `dst`",
    )?;
    let s = raw(
        shape.src_kind,
        src.primal().cast_mut(),
        shape.src_offset,
        "the primal `src`",
    )?;
    let mut lanes = Vec::with_capacity(D::WIDTH.max(S::WIDTH));
    for k in 0..D::WIDTH.max(S::WIDTH) {
        let dd = match dst.lane(k) {
            Some(p) => Some(raw(
                shape.dst_kind,
                p,
                shape.dst_offset,
                "a shadow of `dst`",
            )?),
            None => None,
        };
        let ds = match src.lane(k) {
            Some(p) => Some(raw(
                shape.src_kind,
                p,
                shape.src_offset,
                "a shadow of `src`",
            )?),
            None => None,
        };
        lanes.push((dd, ds));
    }
    Ok(CopyViews {
        dst: d,
        src: s,
        lanes,
    })
}

/// One side of a pointer region rule: its primal and its lanes' shadows, each a view of the
/// elements from its pointer to the end of the box, reached row by row on the host
/// ([`RawShadow::for_boxes`]).
pub(crate) struct BoxViews<T> {
    pub(crate) primal: RawShadow<T>,
    pub(crate) lanes: Vec<RawShadow<T>>,
}

/// # Safety
/// Every pointer valid for the box `r` in memory of kind `kind` (its rows only).
unsafe fn box_views<T: Differentiable>(
    kind: MemoryKind,
    r: Pitched,
    primal: *mut T,
    lane: impl Fn(usize) -> Option<*mut T>,
    side: &'static str,
) -> Result<BoxViews<T>> {
    let s = r.check::<T>(side, usize::MAX)?;
    // The view reaches the box's last element, or, for a box of width 0 (no element), its last
    // row's start, which the checks against the view ask to lie in it.
    let len = match r.width == 0 && r.height > 0 && r.depth > 0 {
        true => s.row_start(r.height - 1, r.depth - 1),
        false => s.end,
    };
    let (pw, sw) = match side {
        "dst" => ("the primal `dst`", "a shadow of `dst`"),
        _ => ("the primal `src`", "a shadow of `src`"),
    };
    // SAFETY: by this function's contract, each pointer is valid for the box's rows, which end
    // at `len`; the views are reached row by row.
    let primal = unsafe { RawShadow::for_boxes(kind, primal, len, pw)? };
    let mut lanes = Vec::new();
    while let Some(p) = lane(lanes.len()) {
        // SAFETY: as above.
        lanes.push(unsafe { RawShadow::for_boxes(kind, p, len, sw)? });
    }
    Ok(BoxViews { primal, lanes })
}

/// The views of a pointer region rule's destination.
///
/// # Safety
/// Every pointer valid for the destination's box (its rows) in memory of the declared kind.
pub(crate) unsafe fn dst_views<T: Differentiable, D: DstPtr<T>>(
    shape: &RawRegion,
    dst: &D,
) -> Result<BoxViews<T>> {
    // SAFETY: by this function's contract.
    unsafe {
        box_views(
            shape.dst_kind,
            shape.dst,
            dst.primal(),
            |k| dst.lane(k),
            "dst",
        )
    }
}

/// The views of a pointer region rule's source.
///
/// # Safety
/// Every pointer valid for the source's box (its rows) in memory of the declared kind.
pub(crate) unsafe fn src_views<T: Differentiable, S: SrcPtr<T>>(
    shape: &RawRegion,
    src: &S,
) -> Result<BoxViews<T>> {
    let r = shape.src.unwrap_or(Pitched::linear::<T>(0, 0));
    let p = src.primal().cast_mut();
    // SAFETY: by this function's contract.
    unsafe { box_views(shape.src_kind, r, p, |k| src.lane(k), "src") }
}
