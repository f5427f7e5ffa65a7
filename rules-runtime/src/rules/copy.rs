//! The bodies of generated copy rules, written once here and called by the code that
//! `#[derivative_rule(copy)]` generates. Each body checks everything first (lengths, aliasing of
//! every buffer against every other, the tape, and the route of every lane's shadow work), so bad
//! input changes nothing; then it runs the primal and the shadow work.
//!
//! Two shapes: *slice* rules, whose `dst`/`src` are references to buffers (`&mut X` ← `&Y`), and
//! *pointer* rules, whose `dst`/`src` are raw pointers with offsets and a length.

use crate::activity::{DstArg, DstPtr, SameWidth, SrcArg, SrcPtr};
use crate::error::{Error, PrimalError, Result, check_len};
use crate::memory::raw::RawShadow;
use crate::memory::{MemoryKind, Overlap, Region, ShadowMemory, ShadowRead};
use crate::ops::{self, On, Op, Plan, Source};

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

/// What the augmented primal of a copy hands to its reverse: the shape of the copy and a
/// fingerprint of the buffers it was made for, so that the reverse can check it is given the same
/// call's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyTape {
    n: usize,
    dst_offset: usize,
    src_offset: usize,
    width: usize,
    primal_ran: bool,
    /// The addresses and lengths of the call's primals, hashed.
    call: u64,
}

impl CopyTape {
    /// Elements copied.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Destination offset (pointer rules; 0 for slice rules).
    pub fn dst_offset(&self) -> usize {
        self.dst_offset
    }
    /// Source offset (pointer rules; 0 for slice rules).
    pub fn src_offset(&self) -> usize {
        self.src_offset
    }
    /// Number of destination shadows (0 for a `Const` destination).
    pub fn width(&self) -> usize {
        self.width
    }
    /// Whether the primal copy ran (false when `dst` was `DuplicatedOnly`, or for a self-copy).
    pub fn primal_ran(&self) -> bool {
        self.primal_ran
    }

    fn check(&self, found: &CopyTape) -> Result<()> {
        let shape = |t: &CopyTape| (t.n, t.dst_offset, t.src_offset, t.width);
        if shape(self) != shape(found) {
            return Err(Error::TapeMismatch(format!(
                "the tape was made for (n, dst offset, src offset, width) = {:?}, \
                 but the reverse was called with {:?}",
                shape(self),
                shape(found)
            )));
        }
        if self.call != found.call {
            return Err(Error::TapeMismatch(
                "the tape was made by a call on other primal buffers: \
                 give each reverse the tape of its own augmented primal"
                    .into(),
            ));
        }
        Ok(())
    }
}

fn lane_name(arg: &str, k: usize) -> String {
    format!("the shadow of `{arg}` (lane {k})")
}

/// The byte ranges of one call: the primals, then each lane's destination and source shadows.
struct Call {
    dst: Region,
    src: Region,
    lanes: Vec<(Option<Region>, Option<Region>)>,
}

/// The bytes two regions share, if any.
fn shared(a: Region, b: Region) -> Option<(u64, u64)> {
    let (start, end) = (a.start.max(b.start), a.end.min(b.end));
    (a.start < a.end && b.start < b.end && start < end).then_some((start, end))
}

impl Call {
    /// Checks how the call's buffers overlap, before anything is written:
    /// - the primals may be the same range (a self-copy), never partially overlap;
    /// - a lane's destination and source shadows likewise;
    /// - no shadow shares a byte with a primal, nor with another lane's shadows.
    ///
    /// Returns how the primals relate.
    fn check(&self) -> Result<Overlap> {
        let primals = check_overlap("the primal `dst` and `src`", self.dst, self.src)?;
        let names = |k: usize| [lane_name("dst", k), lane_name("src", k)];
        for (k, (d, s)) in self.lanes.iter().enumerate() {
            if let (Some(d), Some(s)) = (d, s) {
                check_overlap(&format!("the shadows of lane {k}"), *d, *s)?;
            }
            for (i, shadow) in [d, s].into_iter().enumerate() {
                let Some(shadow) = shadow else { continue };
                for (other, p) in [
                    ("the primal `dst`", self.dst),
                    ("the primal `src`", self.src),
                ] {
                    if let Some((start, end)) = shared(*shadow, p) {
                        return Err(Error::Aliasing {
                            what: names(k)[i].clone(),
                            other: other.into(),
                            start,
                            end,
                        });
                    }
                }
                for (j, (dj, sj)) in self.lanes.iter().enumerate().take(k) {
                    for (m, r) in [dj, sj].into_iter().enumerate() {
                        if let Some((start, end)) = r.and_then(|r| shared(*shadow, r)) {
                            return Err(Error::Aliasing {
                                what: names(k)[i].clone(),
                                other: names(j)[m].clone(),
                                start,
                                end,
                            });
                        }
                    }
                }
            }
        }
        Ok(primals)
    }

    /// A hash of the primals' ranges (FNV-1a over their bytes): the tape's fingerprint of the
    /// call. Shadows are left out: seeding a cotangent into a fresh buffer between the augmented
    /// primal and the reverse is ordinary use.
    fn fingerprint(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for x in [self.dst.start, self.dst.end, self.src.start, self.src.end] {
            for b in x.to_le_bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h
    }
}

fn check_overlap(what: &str, d: Region, s: Region) -> Result<Overlap> {
    match d.relation(s) {
        Overlap::Partial => Err(Error::partial_overlap(what, d, s)),
        o => Ok(o),
    }
}

/// Checks a slice rule's arguments: primal lengths agree, every shadow has its primal's length,
/// and the buffers overlap only as [`Call::check`] allows. Returns `n` and the call.
fn check_slices<X, Y, D, S>(dst: &D, src: &S) -> Result<(usize, Call)>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
{
    let n = src.primal().len();
    check_len("the primal `dst`", n, dst.primal().len())?;
    let mut lanes = Vec::with_capacity(D::WIDTH.max(S::WIDTH));
    for k in 0..D::WIDTH.max(S::WIDTH) {
        let (dd, ds) = (dst.lane(k), src.lane(k));
        if let Some(dd) = dd {
            check_len(lane_name("dst", k), n, dd.len())?;
        }
        if let Some(ds) = ds {
            check_len(lane_name("src", k), n, ds.len())?;
        }
        lanes.push((dd.map(ShadowRead::region), ds.map(ShadowRead::region)));
    }
    let call = Call {
        dst: dst.primal().region(),
        src: src.primal().region(),
        lanes,
    };
    call.check()?;
    Ok((n, call))
}

/// The shadow work of every lane of a reverse (or, with `zero_only`, of the forward's lanes whose
/// source is `Const`), planned before any lane runs: a lane that would fail fails here.
fn plan_lanes<'s, 'b, X, Y>(
    on: On<'s>,
    lanes: impl Iterator<Item = (Option<&'b X>, Option<&'b Y>)>,
    reverse: bool,
) -> Result<Vec<Option<Plan<'s>>>>
where
    X: ShadowMemory + ?Sized + 'b,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized + 'b,
{
    lanes
        .map(|(dd, ds)| match (dd, ds) {
            (Some(dd), Some(ds)) if reverse => {
                ops::plan(on, Op::AccumulateAndZero, ds, Some(dd)).map(Some)
            }
            (Some(dd), None) => ops::plan::<X, X>(on, Op::Zero, dd, None).map(Some),
            _ => Ok(None),
        })
        .collect()
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
    let (_, call) = check_slices(&dst, &src)?;
    // Plans hold no borrow of the buffers: they are made from shared views, then run on the
    // exclusive ones, which are the same buffers.
    let plans = {
        let lanes = (0..D::WIDTH).map(|k| (dst.lane(k), src.lane(k)));
        plan_lanes::<X, Y>(on, lanes, false)?
    };
    if D::PRIMAL_NEEDED {
        primal(dst.primal_mut(), src.primal()).into_result()?;
    }
    for (k, plan) in plans.into_iter().enumerate() {
        let Some(dd) = dst.lane_mut(k) else { continue };
        match (plan, src.lane(k)) {
            (Some(p), _) => p.run::<X, X>(dd, Source::None)?,
            (None, Some(_)) if call.lanes[k].0 == call.lanes[k].1 => {} // self-copy: identity
            (None, Some(ds)) => primal(dd, ds).into_result()?,
            (None, None) => {}
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
    let (n, call) = check_slices(&dst, &src)?;
    if D::PRIMAL_NEEDED {
        primal(dst.primal_mut(), src.primal()).into_result()?;
    }
    Ok(CopyTape {
        n,
        dst_offset: 0,
        src_offset: 0,
        width: D::WIDTH,
        primal_ran: D::PRIMAL_NEEDED,
        call: call.fingerprint(),
    })
}

/// Reverse of a slice copy, for each lane `k` in order on the copy's stream: if `src` is active,
/// `d_src[k] += d_dst[k]`; then `d_dst[k] ← 0` (fused into one pass). A self-copy is the identity.
/// Every lane is planned (checked and routed) before the first one runs.
pub fn copy_reverse<X, Y, D, S>(on: On<'_>, tape: CopyTape, mut dst: D, mut src: S) -> Result<()>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    D: DstArg<X>,
    S: SrcArg<Y>,
    D::Width: SameWidth<S::Width>,
{
    let (n, call) = check_slices(&dst, &src)?;
    tape.check(&CopyTape {
        n,
        dst_offset: 0,
        src_offset: 0,
        width: D::WIDTH,
        primal_ran: tape.primal_ran,
        call: call.fingerprint(),
    })?;
    let plans = {
        let lanes = (0..D::WIDTH).map(|k| (dst.lane(k), src.lane(k)));
        plan_lanes::<X, Y>(on, lanes, true)?
    };
    for (k, plan) in plans.into_iter().enumerate() {
        let Some(plan) = plan else { continue };
        let Some(dd) = dst.lane_mut(k) else { continue };
        match src.lane_mut(k) {
            Some(ds) => plan.run(ds, Source::Take(dd))?,
            None => plan.run::<X, X>(dd, Source::None)?,
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
    call: Call,
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
    Ok(shape.tape(D::WIDTH, D::PRIMAL_NEEDED, &plan.call))
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
