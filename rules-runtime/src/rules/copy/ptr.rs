//! The bodies of pointer copy rules: `dst` and `src` are raw pointers of declared memory kinds,
//! with offsets and a length ([`PtrCopy`]); each pointer is seen through a view of its `n`
//! elements (made by the raw rule's method, `crate::memory::raw::rules`, under its `unsafe`
//! contract), checked like a slice rule's buffers.

use super::{Call, CopyTape, PrimalOutcome, plan_lanes};
use crate::activity::{DstPtr, SrcPtr};
use crate::error::Result;
use crate::memory::raw::RawShadow;
use crate::memory::raw::lanes::CopyViews;
use crate::memory::{MemoryKind, Overlap, ShadowRead};
use crate::ops::{On, Source, refuse_call_in_capture};
use crate::rules::checked::{self, RuleNames, Which};

/// The memory kinds and extent of a pointer rule, as the attribute and the call give them.
#[derive(Clone, Copy, Debug)]
pub struct PtrCopy {
    /// Declared kind of `dst` (and of its shadows).
    pub dst_kind: MemoryKind,
    /// Declared kind of `src` (and of its shadows).
    pub src_kind: MemoryKind,
    /// Destination offset, in elements.
    pub dst_offset: usize,
    /// Source offset, in elements.
    pub src_offset: usize,
    /// Elements copied.
    pub n: usize,
}

struct PtrPlan<T> {
    /// The primals' views, for the checked mode's compare.
    dst: RawShadow<T>,
    src: RawShadow<T>,
    /// Per lane: the destination shadow, and the source shadow if `src` is active.
    lanes: Vec<(RawShadow<T>, Option<RawShadow<T>>)>,
    /// Whether the primal copy is an exact self-copy (the identity): it is then not called, so a
    /// primal written with `copy_nonoverlapping` is never handed overlapping ranges.
    primal_is_identity: bool,
    call: Call,
}

impl PtrCopy {
    /// Checks a pointer rule's arguments, seen through their views. Nothing is written.
    fn plan<T: crate::element::Differentiable>(
        &self,
        on: On<'_>,
        views: CopyViews<T>,
    ) -> Result<PtrPlan<T>> {
        let CopyViews { dst, src, lanes } = views;
        let regions = lanes
            .iter()
            .map(|(dd, ds)| {
                (
                    dd.as_ref().map(ShadowRead::region),
                    ds.as_ref().map(ShadowRead::region),
                )
            })
            .collect();
        let call = Call {
            dst: dst.region(),
            src: src.region(),
            lanes: regions,
        };
        let primal_is_identity = call.check()? == Overlap::Same;
        let host = self.dst_kind == MemoryKind::Host || self.src_kind == MemoryKind::Host;
        refuse_call_in_capture(on, None, "a copy rule on pageable host memory", host)?;
        let lanes = lanes
            .into_iter()
            .filter_map(|(dd, ds)| dd.map(|dd| (dd, ds)))
            .collect();
        Ok(PtrPlan {
            dst,
            src,
            lanes,
            primal_is_identity,
            call,
        })
    }

    fn tape(&self, width: usize, primal_ran: bool, call: &Call) -> CopyTape {
        CopyTape {
            n: self.n,
            dst_offset: self.dst_offset,
            src_offset: self.src_offset,
            width,
            primal_ran,
            call: call.fingerprint(),
        }
    }
}

/// Forward rule of a pointer copy; see [`copy_forward`](super::copy_forward), on the call's views
/// (made by the raw rule's method under its `unsafe` contract). `primal(dst, src)` runs the user's
/// copy with the call's offsets and length.
pub(crate) fn ptr_copy_forward<T, D, S, F, R>(
    on: On<'_>,
    (shape, names): (PtrCopy, RuleNames),
    views: CopyViews<T>,
    dst: &D,
    src: &S,
    mut primal: F,
) -> Result<()>
where
    T: crate::element::Differentiable,
    D: DstPtr<T>,
    S: SrcPtr<T>,
    F: FnMut(*mut T, *const T) -> R,
    R: PrimalOutcome,
{
    let plan = shape.plan(on, views)?;
    let zeros = plan_lanes::<RawShadow<T>, RawShadow<T>>(
        on,
        plan.lanes.iter().map(|(dd, ds)| (Some(dd), ds.as_ref())),
        false,
    )?;
    checked::refuse_capture(on, None)?;
    if D::PRIMAL_NEEDED && !plan.primal_is_identity {
        primal(dst.primal(), src.primal()).into_result()?;
        checked::copied_whole(on, names, Which::Primal, &plan.dst, &plan.src)?;
    }
    for (k, ((mut dd, ds), zero)) in plan.lanes.into_iter().zip(zeros).enumerate() {
        match (zero, ds) {
            (Some(z), _) => z.run::<_, RawShadow<T>>(&mut dd, Source::None)?,
            (None, Some(ds)) if ds.region() == dd.region() => {}
            (None, Some(ds)) => {
                let (Some(d), Some(s)) = (dst.lane(k), src.lane(k)) else {
                    continue;
                };
                primal(d, s).into_result()?;
                checked::copied_whole(on, names, Which::Lane(k), &dd, &ds)?;
            }
            (None, None) => {}
        }
    }
    Ok(())
}

/// Augmented primal of a pointer copy; see
/// [`copy_augmented_primal`](super::copy_augmented_primal), on the call's views.
pub(crate) fn ptr_copy_augmented_primal<T, D, S, F, R>(
    on: On<'_>,
    (shape, names): (PtrCopy, RuleNames),
    views: CopyViews<T>,
    dst: &D,
    src: &S,
    mut primal: F,
) -> Result<CopyTape>
where
    T: crate::element::Differentiable,
    D: DstPtr<T>,
    S: SrcPtr<T>,
    F: FnMut(*mut T, *const T) -> R,
    R: PrimalOutcome,
{
    let plan = shape.plan(on, views)?;
    checked::refuse_capture(on, None)?;
    if D::PRIMAL_NEEDED && !plan.primal_is_identity {
        primal(dst.primal(), src.primal()).into_result()?;
        checked::copied_whole(on, names, Which::Primal, &plan.dst, &plan.src)?;
    }
    Ok(shape.tape(D::WIDTH, D::PRIMAL_NEEDED, &plan.call))
}

/// Reverse of a pointer copy; see [`copy_reverse`](super::copy_reverse), on the call's views.
pub(crate) fn ptr_copy_reverse<T, D>(
    on: On<'_>,
    shape: PtrCopy,
    tape: CopyTape,
    views: CopyViews<T>,
) -> Result<()>
where
    T: crate::element::Differentiable,
    D: DstPtr<T>,
{
    let plan = shape.plan(on, views)?;
    tape.check(&shape.tape(D::WIDTH, tape.primal_ran, &plan.call))?;
    let plans = plan_lanes::<RawShadow<T>, RawShadow<T>>(
        on,
        plan.lanes.iter().map(|(dd, ds)| (Some(dd), ds.as_ref())),
        true,
    )?;
    for ((mut dd, ds), p) in plan.lanes.into_iter().zip(plans) {
        let Some(p) = p else { continue };
        match ds {
            Some(mut ds) => p.run(&mut ds, Source::Take(&mut dd))?,
            None => p.run::<_, RawShadow<T>>(&mut dd, Source::None)?,
        }
    }
    Ok(())
}
