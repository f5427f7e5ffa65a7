//! The bodies of generated copy rules (DESIGN §3), written once here and called by the code that
//! `#[derivative_rule(copy)]` generates. Each body checks everything first (lengths, aliasing,
//! tape), so bad input changes nothing, then runs the primal and the shadow work.
//!
//! Two shapes: *slice* rules, whose `dst`/`src` are references to buffers (`&mut X` ← `&Y`), and
//! *pointer* rules, whose `dst`/`src` are raw pointers with offsets and a length.

use crate::activity::{DstArg, DstPtr, SameWidth, SrcArg, SrcPtr};
use crate::error::{Error, PrimalError, Result};
use crate::memory::raw::RawShadow;
use crate::memory::{MemoryKind, Overlap, Region, ShadowMemory};
use crate::ops::On;
use crate::peer;

/// What a copy primitive may return: `()` or `Result<(), E>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a return type a derivative rule can pass on",
    label = "a copy primitive returns `()` or `Result<(), E>`",
    note = "in `Result<(), E>`, `E` must convert into `Box<dyn std::error::Error + Send + Sync>`: implement `std::error::Error` for it (it must also be `Send + Sync + 'static`)"
)]
pub trait PrimalOutcome {
    /// The primal's outcome as the runtime's result.
    fn into_result(self) -> Result<()>;
}
impl PrimalOutcome for () {
    fn into_result(self) -> Result<()> {
        Ok(())
    }
}
impl<E: Into<PrimalError>> PrimalOutcome for core::result::Result<(), E> {
    fn into_result(self) -> Result<()> {
        self.map_err(Error::primal)
    }
}

/// What the augmented primal of a copy hands to its reverse: the shape of the copy, so that the
/// reverse can check it is given the same arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyTape {
    /// Elements copied.
    pub n: usize,
    /// Destination offset (pointer rules; 0 for slice rules).
    pub dst_offset: usize,
    /// Source offset (pointer rules; 0 for slice rules).
    pub src_offset: usize,
    /// Number of destination shadows.
    pub width: usize,
    /// Whether the primal copy ran (false when `dst` was `DuplicatedOnly`).
    pub primal_ran: bool,
}

impl CopyTape {
    fn check(&self, n: usize, dst_offset: usize, src_offset: usize, width: usize) -> Result<()> {
        let found = (n, dst_offset, src_offset, width);
        let made = (self.n, self.dst_offset, self.src_offset, self.width);
        if found == made {
            Ok(())
        } else {
            Err(Error::TapeMismatch(format!(
                "the tape was made for (n, dst offset, src offset, width) = {made:?}, \
                 but the reverse was called with {found:?}"
            )))
        }
    }
}

fn lane_name(arg: &str, k: usize) -> String {
    format!("the shadow of `{arg}` (lane {k})")
}

fn check_same_len(what: String, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what,
            expected,
            found,
        })
    }
}

fn check_overlap(what: &str, d: Region, s: Region) -> Result<Overlap> {
    match d.relation(s) {
        Overlap::Partial => Err(Error::PartialOverlap {
            what: what.to_string(),
            dst_start: d.start,
            dst_end: d.end,
            src_start: s.start,
            src_end: s.end,
        }),
        o => Ok(o),
    }
}

/// Checks a slice rule's arguments: primal lengths agree, every shadow has its primal's length,
/// no pair partially overlaps. Returns `n`.
fn check_slices<X, Y, D, S>(dst: &D, src: &S) -> Result<usize>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
{
    let n = src.primal().len();
    check_same_len("the primal `dst`".into(), n, dst.primal().len())?;
    check_overlap(
        "the primal `dst` and `src`",
        dst.primal().region(),
        src.primal().region(),
    )?;
    for k in 0..D::WIDTH.max(S::WIDTH) {
        let (dd, ds) = (dst.lane(k), src.lane(k));
        if let Some(dd) = dd {
            check_same_len(lane_name("dst", k), n, dd.len())?;
        }
        if let Some(ds) = ds {
            check_same_len(lane_name("src", k), n, ds.len())?;
        }
        if let (Some(dd), Some(ds)) = (dd, ds) {
            check_overlap(
                &format!("the shadows of lane {k}"),
                dd.region(),
                ds.region(),
            )?;
        }
    }
    Ok(n)
}

/// Forward (tangent) rule of a slice copy `dst ← src`: runs the primal (unless `dst` is
/// `DuplicatedOnly`), then for each lane `k`: `d_dst[k] ← d_src[k]` through the primal copy itself
/// (same direction, same stream), or `d_dst[k] ← 0` when `src` is `Const`.
pub fn copy_forward<X, Y, D, S, F, R>(on: On<'_>, mut dst: D, src: S, mut primal: F) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
    D::Width: SameWidth<S::Width>,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    check_slices(&dst, &src)?;
    if D::PRIMAL_NEEDED {
        primal(dst.primal_mut(), src.primal()).into_result()?;
    }
    for k in 0..D::WIDTH {
        let Some(dd) = dst.lane_mut(k) else { continue };
        match src.lane(k) {
            Some(ds) if dd.region() == ds.region() => {} // self-copy: identity
            Some(ds) => primal(dd, ds).into_result()?,
            None => peer::zero(on, dd)?,
        }
    }
    Ok(())
}

/// Augmented primal of a slice copy: checks, runs the primal (unless `dst` is `DuplicatedOnly`),
/// and returns the tape for [`copy_reverse`].
pub fn copy_augmented_primal<X, Y, D, S, F, R>(
    mut dst: D,
    src: S,
    mut primal: F,
) -> Result<CopyTape>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
    D::Width: SameWidth<S::Width>,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    let n = check_slices(&dst, &src)?;
    if D::PRIMAL_NEEDED {
        primal(dst.primal_mut(), src.primal()).into_result()?;
    }
    Ok(CopyTape {
        n,
        dst_offset: 0,
        src_offset: 0,
        width: D::WIDTH,
        primal_ran: D::PRIMAL_NEEDED,
    })
}

/// Reverse of a slice copy, for each lane `k` in order on the copy's stream: if `src` is active,
/// `d_src[k] += d_dst[k]`; then `d_dst[k] ← 0` (fused into one pass). A self-copy is the identity.
pub fn copy_reverse<X, Y, D, S>(on: On<'_>, tape: CopyTape, mut dst: D, mut src: S) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
    D::Width: SameWidth<S::Width>,
{
    let n = check_slices(&dst, &src)?;
    tape.check(n, 0, 0, D::WIDTH)?;
    for k in 0..D::WIDTH {
        let Some(dd) = dst.lane_mut(k) else { continue };
        match src.lane_mut(k) {
            Some(ds) => peer::accumulate_and_zero(on, ds, dd)?,
            None => peer::zero(on, dd)?,
        }
    }
    Ok(())
}

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
}

impl PtrCopy {
    /// Checks a pointer rule's arguments and builds its shadow views. Nothing is written.
    ///
    /// # Safety
    /// Every pointer must be valid for `offset + n` elements of its declared kind.
    unsafe fn plan<T, D, S>(&self, dst: &D, src: &S) -> Result<PtrPlan<T>>
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
        let primal_is_identity =
            check_overlap("the primal `dst` and `src`", pd.region(), ps.region())? == Overlap::Same;
        let mut lanes = Vec::with_capacity(D::WIDTH);
        for k in 0..D::WIDTH.max(S::WIDTH) {
            let ds = match src.lane(k) {
                Some(p) => Some(raw(self.src_kind, p, self.src_offset, "a shadow of `src`")?),
                None => None,
            };
            let Some(dp) = dst.lane(k) else { continue };
            let dd = raw(self.dst_kind, dp, self.dst_offset, "a shadow of `dst`")?;
            if let Some(ds) = &ds {
                check_overlap(
                    &format!("the shadows of lane {k}"),
                    dd.region(),
                    ds.region(),
                )?;
            }
            lanes.push((dd, ds));
        }
        Ok(PtrPlan {
            lanes,
            primal_is_identity,
        })
    }
}

/// Forward rule of a pointer copy; see [`copy_forward`]. `primal(dst, src)` runs the user's copy
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
    let plan = unsafe { shape.plan(&dst, &src)? };
    if D::PRIMAL_NEEDED && !plan.primal_is_identity {
        primal(dst.primal(), src.primal()).into_result()?;
    }
    for (k, (mut dd, ds)) in plan.lanes.into_iter().enumerate() {
        match ds {
            Some(ds) if ds.region() == dd.region() => {}
            Some(_) => {
                let (Some(d), Some(s)) = (dst.lane(k), src.lane(k)) else {
                    continue;
                };
                primal(d, s).into_result()?;
            }
            None => peer::zero(on, &mut dd)?,
        }
    }
    Ok(())
}

/// Augmented primal of a pointer copy; see [`copy_augmented_primal`].
///
/// # Safety
/// As [`ptr_copy_forward`].
pub unsafe fn ptr_copy_augmented_primal<T, D, S, F, R>(
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
    let plan = unsafe { shape.plan(&dst, &src)? };
    if D::PRIMAL_NEEDED && !plan.primal_is_identity {
        primal(dst.primal(), src.primal()).into_result()?;
    }
    Ok(CopyTape {
        n: shape.n,
        dst_offset: shape.dst_offset,
        src_offset: shape.src_offset,
        width: D::WIDTH,
        primal_ran: D::PRIMAL_NEEDED,
    })
}

/// Reverse of a pointer copy; see [`copy_reverse`].
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
    let plan = unsafe { shape.plan(&dst, &src)? };
    tape.check(shape.n, shape.dst_offset, shape.src_offset, D::WIDTH)?;
    for (mut dd, ds) in plan.lanes {
        match ds {
            Some(mut ds) => peer::accumulate_and_zero(on, &mut ds, &mut dd)?,
            None => peer::zero(on, &mut dd)?,
        }
    }
    Ok(())
}
