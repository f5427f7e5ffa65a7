//! The rule objects a bridge drives, behind one trait: a pointer copy's ([`Linear`]), a pointer
//! region copy's (`copy2d`, `copy3d`, a copy with `restore`: [`Region`]) and a pointer memset's
//! ([`Memset`]). The generated constructor wraps the rule object in the one its kind needs, so
//! the four bridges ([`super::bridge`]) are written once: they ask it how far each side reaches
//! (to check a handle's or a slice's length before any pointer is used) and call its forward
//! rule, augmented primal and reverse on the activities Enzyme's shadow slots resolve to.

use crate::activity::{DstPtr, SameWidth, SrcPtr};
use crate::autodiff::AdError;
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::region::Pitched;
use crate::rules::{CopyTape, RawCopyRule, RawMemsetRule, RawRegionRule, RegionTape};

/// A rule object as the bridges drive it. Implemented here only, for the three wrappers.
///
/// The `unsafe` methods have the contract of the wrapped rule's methods (the raw rule traits'):
/// every pointer valid for what [`AdRule::fits`] checked, for the declared memory kinds.
pub trait AdRule<'s, T: Differentiable> {
    /// What the augmented primal hands to the reverse (boxed in the bridges' `Tape`).
    type Tape: 'static;
    /// Whether the rule has a source (a memset has none: its source side is `Side::Absent`).
    const SOURCE: bool = true;
    /// Whether a side of `len` elements holds what the call reaches: `side` 0 is `dst`, 1 is
    /// `src` (`what` names it in the error).
    fn fits(&self, side: usize, what: &'static str, len: usize) -> Result<(), AdError>;
    /// The rule's forward rule.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn fwd<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>;
    /// The rule's augmented primal.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn aug<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<Self::Tape>
    where
        D::Width: SameWidth<S::Width>;
    /// The rule's reverse.
    ///
    /// # Safety
    /// See the trait; `tape` is what [`AdRule::aug`] returned for this call.
    unsafe fn rev<D: DstPtr<T>, S: SrcPtr<T>>(
        &mut self,
        tape: Self::Tape,
        dst: D,
        src: S,
    ) -> Result<()>
    where
        D::Width: SameWidth<S::Width>;
}

/// A pointer `copy` rule object (`RawCopyRule`): `offset + n` elements on each side.
pub struct Linear<R>(pub R);

/// A pointer region copy's rule object (`RawRegionRule`: `copy2d`, `copy3d`, a copy with
/// `restore`): each side's box, its rows only (the padding between them is never touched).
pub struct Region<R>(pub R);

/// A pointer `memset`'s rule object (`RawMemsetRule`): the destination's box; it has no source
/// (the bridges pass `Side::Absent`, which resolves to a `Const` null pointer never read).
pub struct Memset<R>(pub R);

/// `offset + n` against `len`.
pub(super) fn linear_fits(
    what: &'static str,
    offset: usize,
    n: usize,
    len: usize,
) -> Result<(), AdError> {
    let need = offset
        .checked_add(n)
        .ok_or(AdError::Rule(Error::RangeOverflow {
            what,
            offset,
            len: n,
        }))?;
    if len < need {
        return Err(AdError::Rule(Error::LengthMismatch {
            what: format!("{what} (offset {offset} + length {n})"),
            expected: need,
            found: len,
        }));
    }
    Ok(())
}

/// A box against `len` elements of `T` (the last element of its last row inside).
fn box_fits<T>(what: &'static str, b: Option<Pitched>, len: usize) -> Result<(), AdError> {
    match b {
        Some(b) => b.check::<T>(what, len).map(drop).map_err(AdError::Rule),
        // A region rule without this side's box (never for a copy): nothing reaches it.
        None => Ok(()),
    }
}

impl<'s, T: Differentiable, R: RawCopyRule<'s, T>> AdRule<'s, T> for Linear<R> {
    type Tape = CopyTape;
    fn fits(&self, side: usize, what: &'static str, len: usize) -> Result<(), AdError> {
        let (_, p) = self.0.__plan();
        let offset = if side == 0 {
            p.dst_offset
        } else {
            p.src_offset
        };
        linear_fits(what, offset, p.n, len)
    }
    unsafe fn fwd<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        // SAFETY: the caller's contract is the rule's.
        unsafe { self.0.forward(dst, src) }
    }
    unsafe fn aug<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<CopyTape>
    where
        D::Width: SameWidth<S::Width>,
    {
        // SAFETY: as above.
        unsafe { self.0.augmented_primal(dst, src) }
    }
    unsafe fn rev<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, t: CopyTape, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        // SAFETY: as above.
        unsafe { self.0.reverse(t, dst, src) }
    }
}

impl<'s, T: Differentiable, R: RawRegionRule<'s, T>> AdRule<'s, T> for Region<R> {
    type Tape = RegionTape<T>;
    fn fits(&self, side: usize, what: &'static str, len: usize) -> Result<(), AdError> {
        let (_, shape, _) = self.0.__plan();
        box_fits::<T>(
            what,
            if side == 0 {
                Some(shape.dst)
            } else {
                shape.src
            },
            len,
        )
    }
    unsafe fn fwd<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        // SAFETY: the caller's contract is the rule's.
        unsafe { self.0.forward(dst, src) }
    }
    unsafe fn aug<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<RegionTape<T>>
    where
        D::Width: SameWidth<S::Width>,
    {
        // SAFETY: as above.
        unsafe { self.0.augmented_primal(dst, src) }
    }
    unsafe fn rev<D: DstPtr<T>, S: SrcPtr<T>>(
        &mut self,
        t: RegionTape<T>,
        dst: D,
        src: S,
    ) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        // SAFETY: as above.
        unsafe { self.0.reverse(t, dst, src) }
    }
}

impl<'s, T: Differentiable, R: RawMemsetRule<'s, T>> AdRule<'s, T> for Memset<R> {
    type Tape = RegionTape<T>;
    const SOURCE: bool = false;
    fn fits(&self, side: usize, what: &'static str, len: usize) -> Result<(), AdError> {
        let (_, shape, _) = self.0.__plan();
        box_fits::<T>(what, (side == 0).then_some(shape.dst), len)
    }
    unsafe fn fwd<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, _: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        // SAFETY: the caller's contract is the rule's.
        unsafe { self.0.forward(dst) }
    }
    unsafe fn aug<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, _: S) -> Result<RegionTape<T>>
    where
        D::Width: SameWidth<S::Width>,
    {
        // SAFETY: as above.
        unsafe { self.0.augmented_primal(dst) }
    }
    unsafe fn rev<D: DstPtr<T>, S: SrcPtr<T>>(
        &mut self,
        t: RegionTape<T>,
        dst: D,
        _: S,
    ) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        // SAFETY: as above.
        unsafe { self.0.reverse(t, dst) }
    }
}
