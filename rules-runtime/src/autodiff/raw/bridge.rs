//! The bridges themselves: what the generated `extern "C"` primal, forward rule, augmented
//! primal and reverse call (a fill's are in `fill.rs`). Each buffer argument arrives as a
//! [`Side`] (a handle and its shadow slot, a host slice, or none for a memset's source); here it
//! is checked against what the rule object ([`AdRule`]) reaches and resolved into activities.

use super::arrays::Entered;
use super::rules::AdRule;
use super::tapes::Tape;
use super::{AdBuf, PRIMAL, kind_of};
use crate::activity::{Const, Duplicated};
use crate::autodiff::{AdError, Bridge, record};
use crate::element::Differentiable;
use crate::error::Error;
use crate::memory::MemoryKind;
use cudarc::driver::CudaStream;
use std::sync::Arc;
/// A buffer argument of a bridge: its primal, its shadow slot, and how the rule takes it.
pub enum Side<T> {
    /// A handle and the handle in its shadow slot, for a side of the declared kind.
    Handle(*const AdBuf<T>, *const AdBuf<T>, MemoryKind),
    /// A host slice: its pointer and length, and the pointer in its shadow slot.
    Slice(*mut T, usize, *mut T),
    /// No buffer: the source of a rule that has none (a memset). Resolves to a `Const` null
    /// pointer, which the rule never reads.
    Absent,
}

/// The stream of a call's handles, for a rule that has one: the bridge hands it to the rule's
/// constructor (`make`). Not an argument of the bridge: in forward mode, Enzyme uses a custom
/// derivative only when every argument it treats as constant is a float or an integer (a
/// constant pointer, such as a stream, makes it differentiate the body instead).
#[derive(Clone, Copy)]
pub struct Streams<'s>(Option<&'s Arc<CudaStream>>);

impl<'s> Streams<'s> {
    /// The guard that waits for the stream if the bridge unwinds ([`UnwindWait`]); `finished`
    /// waits on every other path.
    pub(super) fn wait_on_unwind(self) -> UnwindWait<'s> {
        UnwindWait(self.0)
    }

    /// The stream, or the error that a rule with a stream got no handle that carries one.
    pub fn get(self) -> Result<&'s Arc<CudaStream>, AdError> {
        self.0.ok_or(AdError::Handle {
            what: "stream",
            why: "the rule has a stream, which the bridges take from its handles: make them with \
                  AdPair::new(.., stream)"
                .into(),
        })
    }
}

/// The stream of the call's primal handles; an error when two disagree. A handle that is not a
/// primal is skipped here, its stream never read (a shadow handle moved out of its pair by
/// `mem::swap` may outlive the pair's stream), and refused by `Side::resolve`.
///
/// # Safety
/// As `Side::resolve`.
pub(super) unsafe fn streams<'s, T>(dst: &Side<T>, src: &Side<T>) -> Result<Streams<'s>, AdError> {
    let mut found: Option<*const Arc<CudaStream>> = None;
    for side in [dst, src] {
        if let Side::Handle(h, _, _) = *side {
            // SAFETY: a live handle, by this function's contract; its role is a plain field.
            let (role, s) = unsafe { ((*h).role, (*h).stream) };
            if role != PRIMAL || s.is_null() {
                continue;
            }
            match found {
                // SAFETY: non-null stream pointers of live handles point at the `Arc`s their
                // pairs borrow.
                Some(f) if !Arc::ptr_eq(unsafe { &*f }, unsafe { &*s }) => {
                    return Err(AdError::Handle {
                        what: "stream",
                        why: "the dst and src handles were made for two streams".into(),
                    });
                }
                _ => found = Some(s),
            }
        }
    }
    // SAFETY: as above; the pair (and so the `Arc`) outlives the bridge's call.
    Streams::checked(found.map(|s| unsafe { &*s }))
}

impl<'s> Streams<'s> {
    /// The stream of a call's primal handles, refused while it captures: the bridges wait for
    /// their stream before returning, which a capture refuses (and is invalidated by), so the
    /// call is refused before anything is enqueued, as every host route is.
    pub(super) fn checked(found: Option<&'s Arc<CudaStream>>) -> Result<Self, AdError> {
        if let Some(s) = found
            && crate::driver::capturing(s).map_err(AdError::Rule)?
        {
            return Err(AdError::Rule(Error::Capturing {
                op: "a std::autodiff bridge (it waits for its stream)",
            }));
        }
        Ok(Streams(found))
    }
}

/// Waits for the stream when dropped during a panic: a rule that panics after enqueuing work
/// skips `finished`, and the work must not outlive the bridge (the caller may forget its pairs).
pub(super) struct UnwindWait<'s>(Option<&'s Arc<CudaStream>>);

impl Drop for UnwindWait<'_> {
    fn drop(&mut self) {
        if std::thread::panicking()
            && let Some(s) = self.0
        {
            // Nothing to report the error to while unwinding; a failed wait leaves the stream as
            // the driver left it.
            let _ = s.synchronize();
        }
    }
}

/// What a side became: both pointers (`Duplicated`), or the primal alone (inactive: `Const`).
#[derive(Clone, Copy)]
pub(super) enum Resolved<T> {
    Dup(*mut T, *mut T),
    Const(*mut T),
}

impl<T> Side<T> {
    /// Checks the side against the declared kind and what the call reaches (`fits`, given the
    /// side's length: the rule's own plan), and reads its pointers.
    ///
    /// # Safety
    /// Handle pointers point at live [`AdBuf`]s (the bridge's arguments: the safe `*_ad`
    /// function passes references, and Enzyme their shadows); a slice's pointer is valid for its
    /// length, and its shadow slot for as many elements (Enzyme's shadow of it).
    pub(super) unsafe fn resolve(
        &self,
        what: &'static str,
        fits: impl FnOnce(&'static str, usize) -> Result<(), AdError>,
    ) -> Result<Resolved<T>, AdError> {
        match *self {
            Side::Absent => Ok(Resolved::Const(core::ptr::null_mut())),
            Side::Slice(p, len, d) => {
                fits(what, len)?;
                Ok(if d == p {
                    Resolved::Const(p)
                } else {
                    Resolved::Dup(p, d)
                })
            }
            Side::Handle(hp, hd, kind) => {
                // SAFETY: live handles, by this function's contract.
                let (p, d) = unsafe { (&*hp, &*hd) };
                if p.role != PRIMAL || kind_of(p.kind) != kind {
                    return Err(AdError::Handle {
                        what,
                        why: format!(
                            "expected the primal handle of {kind:?} memory, got the {} handle of {:?} memory",
                            if p.role == PRIMAL { "primal" } else { "shadow" },
                            p.kind()
                        ),
                    });
                }
                fits(what, p.len)?;
                if core::ptr::eq(hp, hd) {
                    return Ok(Resolved::Const(p.ptr));
                }
                if !d.is_shadow_of(p) {
                    return Err(AdError::Handle {
                        what,
                        why: "the shadow slot holds a handle that is not this buffer's shadow \
                              (pass the two handles of one AdPair)"
                            .into(),
                    });
                }
                Ok(Resolved::Dup(p.ptr, d.ptr))
            }
        }
    }
}

/// The tape of a bridged call: the rule's, and which sides were active (`[dst, src]`).
struct BridgeTape<Tp> {
    tape: Tp,
    active: [bool; 2],
}

/// The activities of a call, or why there are none: a destination Enzyme treated as inactive
/// while its source is active would lose the source's derivative (refused); both inactive is a
/// copy with nothing to differentiate (`Const`, `Const`).
fn pattern<T>(d: Resolved<T>, s: Resolved<T>) -> Result<[bool; 2], AdError> {
    match (d, s) {
        (Resolved::Const(_), Resolved::Dup(..)) => {
            Err(AdError::InactiveDestination { what: "dst" })
        }
        (d, s) => Ok([
            matches!(d, Resolved::Dup(..)),
            matches!(s, Resolved::Dup(..)),
        ]),
    }
}

fn primal_of<T>(r: Resolved<T>) -> *mut T {
    match r {
        Resolved::Dup(p, _) | Resolved::Const(p) => p,
    }
}

/// What every bridge does first: the rule object (with the stream of the call's handles), then
/// both sides checked against what it reaches and resolved.
///
/// # Safety
/// As `Side::resolve` for `dst` and `src`.
unsafe fn prepare<'s, T, R>(
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: &Side<T>,
    src: &Side<T>,
) -> Result<(Streams<'s>, R, Resolved<T>, Resolved<T>), AdError>
where
    T: Differentiable,
    R: AdRule<'s, T>,
{
    // A source exactly where the rule has one: a null `Const` source is for a memset only.
    if R::SOURCE == matches!(src, Side::Absent) || matches!(dst, Side::Absent) {
        return Err(AdError::Handle {
            what: "src",
            why: "the sides do not fit the rule (a memset has no source; a copy has both)".into(),
        });
    }
    // SAFETY: this function's contract.
    let st = unsafe { streams(dst, src)? };
    let rule = make(st)?;
    // SAFETY: this function's contract.
    let (d, s) = unsafe {
        (
            dst.resolve("dst", |w, len| rule.fits(0, w, len))?,
            src.resolve("src", |w, len| rule.fits(1, w, len))?,
        )
    };
    Ok((st, rule, d, s))
}

/// The `extern "C"` primal: runs the call through the rule object (every check of the rule
/// applies), as the function is called outside differentiation.
///
/// # Safety
/// As `Side::resolve` for `dst` and `src`; the rule's contract (the primitive's) for the
/// pointers the sides hold.
pub unsafe fn bridge_primal<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
) where
    T: Differentiable,
    R: AdRule<'s, T>,
{
    let _ = record((name, Bridge::Primal), || {
        let _e = Entered::new()?;
        // SAFETY: this function's contract.
        let (st, mut rule, d, s) = unsafe { prepare(make, &dst, &src)? };
        let _unwind = st.wait_on_unwind();
        let (d, s) = (primal_of(d), primal_of(s));
        // SAFETY: checked sides; the rule's contract by this function's.
        let ran = unsafe { rule.fwd(Const(d), Const(s.cast_const())) }.map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// The forward rule, Enzyme's forward-mode calling convention (each argument followed by its
/// shadow slot): the rule's `forward` on the resolved activities (for a copy, `d_dst ← d_src`,
/// or `← 0` for an inactive source).
///
/// # Safety
/// As [`bridge_aug`].
pub unsafe fn bridge_fwd<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
) where
    T: Differentiable,
    R: AdRule<'s, T>,
{
    let _ = record((name, Bridge::Fwd), || {
        let _e = Entered::new()?;
        // SAFETY: this function's contract.
        let (st, mut rule, dd, ds) = unsafe { prepare(make, &dst, &src)? };
        let _unwind = st.wait_on_unwind();
        pattern(dd, ds)?;
        // SAFETY: checked sides; the rule's contract by this function's.
        let ran = unsafe {
            match (dd, ds) {
                (Resolved::Dup(d, d_d), Resolved::Dup(s, d_s)) => rule.fwd(
                    Duplicated::new(d, d_d),
                    Duplicated::new(s.cast_const(), d_s),
                ),
                (Resolved::Dup(d, d_d), Resolved::Const(s)) => {
                    rule.fwd(Duplicated::new(d, d_d), Const(s.cast_const()))
                }
                (d, s) => rule.fwd(Const(primal_of(d)), Const(primal_of(s).cast_const())),
            }
        }
        .map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// `ran`, once the work a bridge enqueued on the handles' stream has finished. The pairs' guards
/// record that work on the buffers only when an `AdPair` is dropped, and a forgotten one
/// (`mem::forget` is safe) never is: waiting here keeps a later free, or host read, of the
/// buffers after the copy, whatever the caller does with its pairs.
pub(super) fn finished<R>(st: Streams<'_>, ran: Result<R, AdError>) -> Result<R, AdError> {
    let waited = match st.0 {
        Some(s) => s.synchronize().map_err(|e| AdError::Rule(Error::primal(e))),
        None => Ok(()),
    };
    let r = ran?;
    waited?;
    Ok(r)
}

/// The augmented primal: the rule's `augmented_primal` on the resolved activities; returns the
/// boxed tape, or `None` after recording the error.
///
/// # Safety
/// As [`bridge_primal`], the shadows included.
pub unsafe fn bridge_aug<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
) -> Tape
where
    T: Differentiable,
    R: AdRule<'s, T>,
{
    record((name, Bridge::Aug), || {
        let _e = Entered::new()?;
        // SAFETY: this function's contract.
        let (st, mut rule, dd, ds) = unsafe { prepare(make, &dst, &src)? };
        let _unwind = st.wait_on_unwind();
        let active = pattern(dd, ds)?;
        // SAFETY: checked sides; the rule's contract by this function's.
        let tape = unsafe {
            match (dd, ds) {
                (Resolved::Dup(d, d_d), Resolved::Dup(s, d_s)) => rule.aug(
                    Duplicated::new(d, d_d),
                    Duplicated::new(s.cast_const(), d_s),
                ),
                (Resolved::Dup(d, d_d), Resolved::Const(s)) => {
                    rule.aug(Duplicated::new(d, d_d), Const(s.cast_const()))
                }
                (d, s) => rule.aug(Const(primal_of(d)), Const(primal_of(s).cast_const())),
            }
        }
        .map_err(AdError::Rule);
        let tape = finished(st, tape)?;
        Ok(Box::new(BridgeTape::<R::Tape> { tape, active }) as _)
    })
}

/// The reverse: the rule's `reverse` with the tape of [`bridge_aug`].
///
/// # Safety
/// As [`bridge_aug`]; `tape` is what [`bridge_aug`] returned for this call.
pub unsafe fn bridge_rev<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
    tape: Tape,
) where
    T: Differentiable,
    R: AdRule<'s, T>,
{
    let _ = record((name, Bridge::Rev), || {
        let BridgeTape { tape, active } = *tape
            .ok_or(AdError::NoTape)?
            .downcast::<BridgeTape<R::Tape>>()
            .map_err(|_| AdError::TapeOrder)?;
        let _e = Entered::new()?;
        // SAFETY: this function's contract.
        let (st, mut rule, dd, ds) = unsafe { prepare(make, &dst, &src)? };
        let _unwind = st.wait_on_unwind();
        if pattern(dd, ds)? != active {
            return Err(AdError::ActivityChanged { what: "dst or src" });
        }
        // SAFETY: checked sides; the rule's contract by this function's.
        let ran = unsafe {
            match (dd, ds) {
                (Resolved::Dup(d, d_d), Resolved::Dup(s, d_s)) => rule.rev(
                    tape,
                    Duplicated::new(d, d_d),
                    Duplicated::new(s.cast_const(), d_s),
                ),
                (Resolved::Dup(d, d_d), Resolved::Const(s)) => {
                    rule.rev(tape, Duplicated::new(d, d_d), Const(s.cast_const()))
                }
                (d, s) => rule.rev(tape, Const(primal_of(d)), Const(primal_of(s).cast_const())),
            }
        }
        .map_err(AdError::Rule);
        finished(st, ran)
    });
}
