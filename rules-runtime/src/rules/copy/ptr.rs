//! The bodies of pointer copy rules: `dst` and `src` are raw pointers of declared memory kinds,
//! with offsets and a length ([`PtrCopy`]); each pointer is seen through a view of its `n`
//! elements, checked like a slice rule's buffers.

use super::{Call, CopyTape, PrimalOutcome, plan_lanes};
use crate::activity::{DstPtr, SameWidth, SrcPtr};
use crate::error::Result;
use crate::memory::raw::RawShadow;
use crate::memory::{MemoryKind, Overlap, ShadowRead};
use crate::ops::{On, Source, refuse_call_in_capture};

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
    /// Per lane: the destination shadow, and the source shadow if `src` is active.
    lanes: Vec<(RawShadow<T>, Option<RawShadow<T>>)>,
    /// Whether the primal copy is an exact self-copy (the identity): it is then not called, so a
    /// primal written with `copy_nonoverlapping` is never handed overlapping ranges.
    primal_is_identity: bool,
    call: Call,
}

impl PtrCopy {
    /// Checks a pointer rule's arguments and builds its shadow views. Nothing is written.
    ///
    /// # Safety
    /// Every pointer must be valid for `offset + n` elements of its declared kind.
    unsafe fn plan<T, D, S>(&self, on: On<'_>, dst: &D, src: &S) -> Result<PtrPlan<T>>
    where
        T: crate::Differentiable,
        D: DstPtr<T>,
        S: SrcPtr<T>,
    {
        let raw =
            |kind, p: *mut T, off, what| unsafe { RawShadow::new(kind, p, off, self.n, what) };
        let pd = raw(
            self.dst_kind,
            dst.primal(),
            self.dst_offset,
            "the primal `dst`",
        )?;
        let ps = raw(
            self.src_kind,
            src.primal() as *mut T,
            self.src_offset,
            "the primal `src`",
        )?;
        let mut lanes = Vec::with_capacity(D::WIDTH);
        let mut regions = Vec::with_capacity(D::WIDTH.max(S::WIDTH));
        for k in 0..D::WIDTH.max(S::WIDTH) {
            let ds = match src.lane(k) {
                Some(p) => Some(raw(self.src_kind, p, self.src_offset, "a shadow of `src`")?),
                None => None,
            };
            let dd = match dst.lane(k) {
                Some(p) => Some(raw(self.dst_kind, p, self.dst_offset, "a shadow of `dst`")?),
                None => None,
            };
            regions.push((
                dd.as_ref().map(ShadowRead::region),
                ds.as_ref().map(ShadowRead::region),
            ));
            if let Some(dd) = dd {
                lanes.push((dd, ds));
            }
        }
        let call = Call {
            dst: pd.region(),
            src: ps.region(),
            lanes: regions,
        };
        let primal_is_identity = call.check()? == Overlap::Same;
        let host = self.dst_kind == MemoryKind::Host || self.src_kind == MemoryKind::Host;
        refuse_call_in_capture(on, "a copy rule on pageable host memory", host)?;
        Ok(PtrPlan {
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

/// Forward rule of a pointer copy; see [`copy_forward`](super::copy_forward). `primal(dst, src)` runs the user's copy
/// with the call's offsets and length.
///
/// # Safety
/// The primal function's contract, and every shadow pointer valid for `offset + n` elements.
pub unsafe fn ptr_copy_forward<T, D, S, F, R>(
    on: On<'_>,
    shape: PtrCopy,
    dst: D,
    src: S,
    mut primal: F,
) -> Result<()>
where
    T: crate::Differentiable,
    D: DstPtr<T>,
    S: SrcPtr<T>,
    D::Width: SameWidth<S::Width>,
    F: FnMut(*mut T, *const T) -> R,
    R: PrimalOutcome,
{
    let plan = unsafe { shape.plan(on, &dst, &src)? };
    let zeros = plan_lanes::<RawShadow<T>, RawShadow<T>>(
        on,
        plan.lanes.iter().map(|(dd, ds)| (Some(dd), ds.as_ref())),
        false,
    )?;
    if D::PRIMAL_NEEDED && !plan.primal_is_identity {
        primal(dst.primal(), src.primal()).into_result()?;
    }
    for (k, ((mut dd, ds), zero)) in plan.lanes.into_iter().zip(zeros).enumerate() {
        match (zero, ds) {
            (Some(z), _) => z.run::<_, RawShadow<T>>(&mut dd, Source::None)?,
            (None, Some(ds)) if ds.region() == dd.region() => {}
            (None, Some(_)) => {
                let (Some(d), Some(s)) = (dst.lane(k), src.lane(k)) else {
                    continue;
                };
                primal(d, s).into_result()?;
            }
            (None, None) => {}
        }
    }
    Ok(())
}

/// Augmented primal of a pointer copy; see [`copy_augmented_primal`](super::copy_augmented_primal).
///
/// # Safety
/// As [`ptr_copy_forward`].
pub unsafe fn ptr_copy_augmented_primal<T, D, S, F, R>(
    on: On<'_>,
    shape: PtrCopy,
    dst: D,
    src: S,
    mut primal: F,
) -> Result<CopyTape>
where
    T: crate::Differentiable,
    D: DstPtr<T>,
    S: SrcPtr<T>,
    D::Width: SameWidth<S::Width>,
    F: FnMut(*mut T, *const T) -> R,
    R: PrimalOutcome,
{
    let plan = unsafe { shape.plan(on, &dst, &src)? };
    if D::PRIMAL_NEEDED && !plan.primal_is_identity {
        primal(dst.primal(), src.primal()).into_result()?;
    }
    Ok(shape.tape(D::WIDTH, D::PRIMAL_NEEDED, &plan.call))
}

/// Reverse of a pointer copy; see [`copy_reverse`](super::copy_reverse).
///
/// # Safety
/// As [`ptr_copy_forward`].
pub unsafe fn ptr_copy_reverse<T, D, S>(
    on: On<'_>,
    shape: PtrCopy,
    tape: CopyTape,
    dst: D,
    src: S,
) -> Result<()>
where
    T: crate::Differentiable,
    D: DstPtr<T>,
    S: SrcPtr<T>,
    D::Width: SameWidth<S::Width>,
{
    let plan = unsafe { shape.plan(on, &dst, &src)? };
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
