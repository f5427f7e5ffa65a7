//! The bridges themselves: what the generated `extern "C"` primal, forward rule, augmented
//! primal and reverse call. Each buffer argument arrives as a [`Side`] (a handle and its shadow
//! slot, or a host slice); here it is checked and resolved into activities for the rule object.

use super::{AdBuf, PRIMAL, SHADOW, kind_of};
use crate::activity::{Const, Duplicated};
use crate::autodiff::{AdError, Bridge, record};
use crate::element::Differentiable;
use crate::error::Error;
use crate::memory::MemoryKind;
use crate::rules::{CopyTape, RawCopyRule};
use cudarc::driver::CudaStream;
use std::ffi::c_void;
use std::sync::Arc;
/// A buffer argument of a bridge: its primal, its shadow slot, and how the rule takes it.
pub enum Side<T> {
    /// A handle and the handle in its shadow slot, for a side of the declared kind.
    Handle(*const AdBuf<T>, *const AdBuf<T>, MemoryKind),
    /// A host slice: its pointer and length, and the pointer in its shadow slot.
    Slice(*mut T, usize, *mut T),
}

/// The stream of a call's handles, for a rule that has one: the bridge hands it to the rule's
/// constructor (`make`). Not an argument of the bridge: in forward mode, Enzyme uses a custom
/// derivative only when every argument it treats as constant is a float or an integer (a
/// constant pointer, such as a stream, makes it differentiate the body instead).
#[derive(Clone, Copy)]
pub struct Streams<'s>(Option<&'s Arc<CudaStream>>);

impl<'s> Streams<'s> {
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

/// The stream of the call's handles; an error when two disagree.
///
/// # Safety
/// As `Side::resolve`.
unsafe fn streams<'s, T>(dst: &Side<T>, src: &Side<T>) -> Result<Streams<'s>, AdError> {
    let mut found: Option<*const Arc<CudaStream>> = None;
    for side in [dst, src] {
        if let Side::Handle(h, _, _) = *side {
            // SAFETY: a live handle, by this function's contract.
            let s = unsafe { (*h).stream };
            if s.is_null() {
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
    Ok(Streams(found.map(|s| unsafe { &*s })))
}

/// What a side became: both pointers (`Duplicated`), or the primal alone (inactive: `Const`).
#[derive(Clone, Copy)]
pub(super) enum Resolved<T> {
    Dup(*mut T, *mut T),
    Const(*mut T),
}

impl<T> Side<T> {
    /// Checks the side against the declared kind and the elements the call reaches (`offset +
    /// n`), and reads its pointers.
    ///
    /// # Safety
    /// Handle pointers point at live [`AdBuf`]s (the bridge's arguments: the safe `*_ad`
    /// function passes references, and Enzyme their shadows); a slice's pointer is valid for its
    /// length, and its shadow slot for as many elements (Enzyme's shadow of it).
    pub(super) unsafe fn resolve(
        &self,
        what: &'static str,
        offset: usize,
        n: usize,
    ) -> Result<Resolved<T>, AdError> {
        let need = offset
            .checked_add(n)
            .ok_or(AdError::Rule(Error::RangeOverflow {
                what,
                offset,
                len: n,
            }))?;
        let short = |len: usize| {
            AdError::Rule(Error::LengthMismatch {
                what: format!("{what} (offset {offset} + length {n})"),
                expected: need,
                found: len,
            })
        };
        match *self {
            Side::Slice(p, len, d) => {
                if len < need {
                    return Err(short(len));
                }
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
                if p.len < need {
                    return Err(short(p.len));
                }
                if core::ptr::eq(hp, hd) {
                    return Ok(Resolved::Const(p.ptr));
                }
                if d.role != SHADOW || d.ptr != p.partner || d.partner != p.ptr {
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

/// The tape of a bridged copy: the rule's, and which sides were active (`[dst, src]`).
struct BridgeTape {
    tape: CopyTape,
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

/// The `extern "C"` primal of a pointer copy: runs the copy through the rule object (every check
/// of the rule applies), as the function is called outside differentiation.
///
/// # Safety
/// As `Side::resolve` for `dst` and `src`; the rule's contract (the primitive's) for the
/// pointers the sides hold.
pub unsafe fn copy_primal<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
    extent: [usize; 3],
) where
    T: Differentiable,
    R: RawCopyRule<'s, T>,
{
    let [dst_off, src_off, n] = extent;
    let _ = record((name, Bridge::Primal), || {
        // SAFETY: this function's contract.
        let d = unsafe { dst.resolve("dst", dst_off, n)? };
        let s = unsafe { src.resolve("src", src_off, n)? };
        let (d, s) = (primal_of(d), primal_of(s));
        // SAFETY: this function's contract.
        let st = unsafe { streams(&dst, &src)? };
        let mut rule = make(st)?;
        // SAFETY: checked sides; the rule's contract by this function's.
        let ran = unsafe { rule.forward(Const(d), Const(s.cast_const())) }.map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// The forward rule of a pointer copy, Enzyme's forward-mode calling convention (each argument
/// followed by its shadow slot): the rule's `forward` on the resolved activities, `d_dst ←
/// d_src` (or `← 0` for an inactive source).
///
/// # Safety
/// As [`copy_aug`].
pub unsafe fn copy_fwd<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
    extent: [usize; 3],
) where
    T: Differentiable,
    R: RawCopyRule<'s, T>,
{
    let [dst_off, src_off, n] = extent;
    let _ = record((name, Bridge::Fwd), || {
        // SAFETY: this function's contract.
        let (dd, ds) = unsafe {
            (
                dst.resolve("dst", dst_off, n)?,
                src.resolve("src", src_off, n)?,
            )
        };
        pattern(dd, ds)?;
        // SAFETY: this function's contract.
        let st = unsafe { streams(&dst, &src)? };
        let mut rule = make(st)?;
        // SAFETY: checked sides; the rule's contract by this function's.
        let ran = unsafe {
            match (dd, ds) {
                (Resolved::Dup(d, d_d), Resolved::Dup(s, d_s)) => rule.forward(
                    Duplicated::new(d, d_d),
                    Duplicated::new(s.cast_const(), d_s),
                ),
                (Resolved::Dup(d, d_d), Resolved::Const(s)) => {
                    rule.forward(Duplicated::new(d, d_d), Const(s.cast_const()))
                }
                (d, s) => rule.forward(Const(primal_of(d)), Const(primal_of(s).cast_const())),
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
fn finished<R>(st: Streams<'_>, ran: Result<R, AdError>) -> Result<R, AdError> {
    let waited = match st.0 {
        Some(s) => s.synchronize().map_err(|e| AdError::Rule(Error::primal(e))),
        None => Ok(()),
    };
    let r = ran?;
    waited?;
    Ok(r)
}

fn primal_of<T>(r: Resolved<T>) -> *mut T {
    match r {
        Resolved::Dup(p, _) | Resolved::Const(p) => p,
    }
}

/// The augmented primal of a pointer copy: the rule's `augmented_primal` on the resolved
/// activities; returns the boxed tape, or null after recording the error.
///
/// # Safety
/// As [`copy_primal`], the shadows included.
pub unsafe fn copy_aug<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
    extent: [usize; 3],
) -> *mut c_void
where
    T: Differentiable,
    R: RawCopyRule<'s, T>,
{
    let [dst_off, src_off, n] = extent;
    record((name, Bridge::Aug), || {
        // SAFETY: this function's contract.
        let (dd, ds) = unsafe {
            (
                dst.resolve("dst", dst_off, n)?,
                src.resolve("src", src_off, n)?,
            )
        };
        let active = pattern(dd, ds)?;
        // SAFETY: this function's contract.
        let st = unsafe { streams(&dst, &src)? };
        let mut rule = make(st)?;
        // SAFETY: checked sides; the rule's contract by this function's.
        let tape = unsafe {
            match (dd, ds) {
                (Resolved::Dup(d, d_d), Resolved::Dup(s, d_s)) => rule.augmented_primal(
                    Duplicated::new(d, d_d),
                    Duplicated::new(s.cast_const(), d_s),
                ),
                (Resolved::Dup(d, d_d), Resolved::Const(s)) => {
                    rule.augmented_primal(Duplicated::new(d, d_d), Const(s.cast_const()))
                }
                (d, s) => {
                    rule.augmented_primal(Const(primal_of(d)), Const(primal_of(s).cast_const()))
                }
            }
        }
        .map_err(AdError::Rule);
        let tape = finished(st, tape)?;
        Ok(Box::into_raw(Box::new(BridgeTape { tape, active })).cast::<c_void>())
    })
    .unwrap_or(core::ptr::null_mut())
}

/// The reverse of a pointer copy: the rule's `reverse` with the tape of [`copy_aug`].
///
/// # Safety
/// As [`copy_aug`]; `tape` is null or what [`copy_aug`] returned for this call, not used again.
pub unsafe fn copy_rev<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
    extent: [usize; 3],
    tape: *mut c_void,
) where
    T: Differentiable,
    R: RawCopyRule<'s, T>,
{
    let [dst_off, src_off, n] = extent;
    let _ = record((name, Bridge::Rev), || {
        if tape.is_null() {
            return Err(AdError::NoTape);
        }
        // SAFETY: a tape of `copy_aug`, taken once (this function's contract).
        let BridgeTape { tape, active } = unsafe { *Box::from_raw(tape.cast::<BridgeTape>()) };
        // SAFETY: this function's contract.
        let (dd, ds) = unsafe {
            (
                dst.resolve("dst", dst_off, n)?,
                src.resolve("src", src_off, n)?,
            )
        };
        if pattern(dd, ds)? != active {
            return Err(AdError::ActivityChanged { what: "dst or src" });
        }
        // SAFETY: this function's contract.
        let st = unsafe { streams(&dst, &src)? };
        let mut rule = make(st)?;
        // SAFETY: checked sides; the rule's contract by this function's.
        let ran = unsafe {
            match (dd, ds) {
                (Resolved::Dup(d, d_d), Resolved::Dup(s, d_s)) => rule.reverse(
                    tape,
                    Duplicated::new(d, d_d),
                    Duplicated::new(s.cast_const(), d_s),
                ),
                (Resolved::Dup(d, d_d), Resolved::Const(s)) => {
                    rule.reverse(tape, Duplicated::new(d, d_d), Const(s.cast_const()))
                }
                (d, s) => rule.reverse(tape, Const(primal_of(d)), Const(primal_of(s).cast_const())),
            }
        }
        .map_err(AdError::Rule);
        finished(st, ran)
    });
}
