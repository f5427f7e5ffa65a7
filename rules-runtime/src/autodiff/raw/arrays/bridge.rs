//! The array bridges of copies and memsets: the re-entrance guard every bridge takes, the
//! stream of the call's handles, both sides opened into activities, and the four bridges.

use super::rules::{AdRefRule, DstAct, SrcAct};
use super::{RefSide, handle_error};
use crate::autodiff::raw::bridge::{Streams, UnwindWait, finished};
use crate::autodiff::raw::tapes::Tape;
use crate::autodiff::{AdError, Bridge, record};
use std::borrow::{Borrow, BorrowMut};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::Arc;

thread_local! {
    /// Whether a bridge is running on this thread: a rule's primitive that reached a bridge
    /// again (through handles it was given, e.g. an `&AdBuf` argument) would open memory the
    /// outer rule holds (a second `&mut` of an array, or a pinned `RawShadow` read beside its
    /// `host_mut` slice). Taken by every bridge, pointer and fill bridges included.
    static IN_BRIDGE: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as inside a bridge until dropped; an error when it already was.
pub(in crate::autodiff::raw) struct Entered(PhantomData<*const ()>);

impl Entered {
    pub(in crate::autodiff::raw) fn new() -> Result<Self, AdError> {
        if IN_BRIDGE.with(|b| b.replace(true)) {
            return Err(AdError::Handle {
                what: "bridge",
                why: "called from inside another bridge's rule (its buffers are borrowed there)"
                    .into(),
            });
        }
        Ok(Entered(PhantomData))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        IN_BRIDGE.with(|b| b.set(false));
    }
}

/// The stream of the call's primal handles (an error when two disagree), refused while
/// capturing.
///
/// # Safety
/// As `RefSide::open_mut` for `dst` and `src`.
pub(super) unsafe fn ref_streams<'h, D: RefSide<'h>, S: RefSide<'h>>(
    dst: &D,
    src: Option<&S>,
) -> Result<Streams<'h>, AdError> {
    // SAFETY: the contract.
    let (a, b) = unsafe { (dst.stream(), src.and_then(|s| s.stream())) };
    let found = match (a, b) {
        (Some(a), Some(b)) if !Arc::ptr_eq(a, b) => {
            return Err(handle_error(
                "stream",
                "the dst and src handles were made for two streams",
            ));
        }
        (a, b) => a.or(b),
    };
    Streams::checked(found)
}

/// What every array bridge does first: the re-entrance mark, one array never on both sides, the
/// rule object (with the handles' stream), then both sides opened.
///
/// # Safety
/// As `RefSide::open_mut` for `dst` and `src`.
#[allow(clippy::type_complexity)]
unsafe fn prepare<'h, D, S, R>(
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) -> Result<
    (
        Entered,
        Streams<'h>,
        R,
        (D::Mut, Option<D::Mut>),
        Option<(S::Shared, Option<S::Mut>)>,
    ),
    AdError,
>
where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    let entered = Entered::new()?;
    if R::SOURCE != src.is_some() {
        return Err(handle_error(
            "src",
            "the sides do not fit the rule (a memset has no source; a copy has both)",
        ));
    }
    if let Some(s) = &src {
        // SAFETY: this function's contract.
        let (d, s) = unsafe { (dst.ids(), s.ids()) };
        if d.iter().any(|a| !a.is_null() && s.contains(a)) {
            return Err(handle_error(
                "src",
                "the same CUDA array (or its shadow) is the destination: a copy within one \
                 array is not bridged",
            ));
        }
    }
    // SAFETY: the contract.
    let st = unsafe { ref_streams(&dst, src.as_ref())? };
    let rule = make(st)?;
    // SAFETY: the contract; the arrays are distinct (above) and no other bridge holds them.
    let (d, s) = unsafe {
        (
            dst.open_mut("dst")?,
            match src {
                Some(s) => Some(s.open_shared("src")?),
                None => None,
            },
        )
    };
    Ok((entered, st, rule, d, s))
}

/// A call's activities, and which sides are active (`[dst, src]`).
type Acts<'a, X, Y> = (DstAct<'a, X>, Option<SrcAct<'a, Y>>, [bool; 2]);

/// The activities, or the refusal of an inactive destination with an active source (its
/// derivative would be lost).
fn acts<'a, X: ?Sized, Y: ?Sized, DM, SS, SM>(
    d: &'a mut (DM, Option<DM>),
    s: &'a mut Option<(SS, Option<SM>)>,
) -> Result<Acts<'a, X, Y>, AdError>
where
    DM: BorrowMut<X>,
    SS: Borrow<Y>,
    SM: BorrowMut<Y>,
{
    let (dp, dd) = d;
    let dst = match dd {
        Some(dd) => DstAct::Dup(dp.borrow_mut(), dd.borrow_mut()),
        None => DstAct::Const(dp.borrow_mut()),
    };
    let src = s.as_mut().map(|(sp, sd)| match sd {
        Some(sd) => SrcAct::Dup((*sp).borrow(), sd.borrow_mut()),
        None => SrcAct::Const((*sp).borrow()),
    });
    let active = [
        matches!(dst, DstAct::Dup(..)),
        matches!(src, Some(SrcAct::Dup(..))),
    ];
    if active == [false, true] {
        return Err(AdError::InactiveDestination { what: "dst" });
    }
    Ok((dst, src, active))
}

/// The rule's forward rule on the activities the sides resolve to, recorded as bridge `which`:
/// the primal (every shadow slot holds its primal, so all `Const`: the call alone) and the
/// forward rule share it.
///
/// # Safety
/// As `RefSide::open_mut` for `dst` and `src`.
unsafe fn forward<'h, D, S, R>(
    (name, which): (&'static str, Bridge),
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    let _ = record((name, which), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, mut d, mut s) = unsafe { prepare(make, dst, src)? };
        let _unwind: UnwindWait<'_> = st.wait_on_unwind();
        let (dst, src, _) = acts(&mut d, &mut s)?;
        let ran = rule.fwd(dst, src).map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// The `extern "C"` primal of an array rule: the call through the rule object, all inactive.
///
/// # Safety
/// As `RefSide::open_mut` for `dst` and `src` (each shadow slot holding its primal).
pub unsafe fn array_primal<'h, D, S, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    // SAFETY: this function's contract.
    unsafe { forward((name, Bridge::Primal), make, dst, src) }
}

/// The forward rule of an array rule (Enzyme's forward-mode convention).
///
/// # Safety
/// As [`array_primal`], the shadows included.
pub unsafe fn array_fwd<'h, D, S, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    // SAFETY: this function's contract.
    unsafe { forward((name, Bridge::Fwd), make, dst, src) }
}

/// The tape of a bridged array call: the rule's, and which sides were active.
struct ArrayTape<Tp> {
    tape: Tp,
    active: [bool; 2],
}

/// The augmented primal of an array rule; returns the boxed tape, or `None` after recording the
/// error.
///
/// # Safety
/// As [`array_fwd`].
pub unsafe fn array_aug<'h, D, S, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) -> Tape
where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    record((name, Bridge::Aug), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, mut d, mut s) = unsafe { prepare(make, dst, src)? };
        let _unwind = st.wait_on_unwind();
        let (dst, src, active) = acts(&mut d, &mut s)?;
        let tape = rule.aug(dst, src).map_err(AdError::Rule);
        let tape = finished(st, tape)?;
        Ok(Box::new(ArrayTape::<R::Tape> { tape, active }) as _)
    })
}

/// The reverse of an array rule, with the tape of [`array_aug`].
///
/// # Safety
/// As [`array_aug`]; `tape` is what [`array_aug`] returned for this call.
pub unsafe fn array_rev<'h, D, S, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
    tape: Tape,
) where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    let _ = record((name, Bridge::Rev), || {
        let ArrayTape { tape, active } = *tape
            .ok_or(AdError::NoTape)?
            .downcast::<ArrayTape<R::Tape>>()
            .map_err(|_| AdError::TapeOrder)?;
        // SAFETY: this function's contract.
        let (_e, st, mut rule, mut d, mut s) = unsafe { prepare(make, dst, src)? };
        let _unwind = st.wait_on_unwind();
        let (dst, src, now) = acts(&mut d, &mut s)?;
        if now != active {
            return Err(AdError::ActivityChanged { what: "dst or src" });
        }
        let ran = rule.rev(tape, dst, src).map_err(AdError::Rule);
        finished(st, ran)
    });
}
