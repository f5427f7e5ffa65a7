//! The traits of two-buffer rules (`dst ← src`): whole copies and region copies, on references or
//! raw pointers.

use crate::activity::{DstArg, DstPtr, SameWidth, SrcArg, SrcPtr};
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::{ShadowMemory, ShadowRead};
use crate::ops::On;
use crate::rules::Ran;
use crate::rules::{
    Boxes, CopyTape, PtrCopy, RawRegion, RegionTape, copy_augmented_primal, copy_forward,
    copy_reverse, ptr_copy_augmented_primal, ptr_copy_forward, ptr_copy_reverse,
    ptr_region_augmented_primal, ptr_region_forward, ptr_region_reverse, region_augmented_primal,
    region_forward, region_reverse,
};

/// The rules of a `copy` of a whole buffer, `dst: &mut X ← src: &Y`, as `#[derivative_rule(copy)]`
/// generates them (`name_rule`, holding the primitive's other arguments).
///
/// `dst` and `src` are activities of the same batch width (or one of them `Const`): `Const(x)`,
/// `Duplicated::new(x, dx)`, `Duplicated::batch(x, [dx1, dx2, dx3])`, `DuplicatedOnly::new(x, dx)`.
/// Every argument and every lane is checked before the first write (lengths, overlaps, memory
/// kinds, streams, contexts, the tape), so such an `Err` changes nothing; `Error::Primal` (the
/// primitive failed) and `Error::Driver` report a failure of the work itself.
pub trait CopyRule<'s, X: ShadowMemory + ?Sized, Y: ShadowMemory<Elem = X::Elem> + ?Sized> {
    /// The stream that orders the shadow work (the host when the primitive has none).
    #[doc(hidden)]
    fn __on(&self) -> On<'s> {
        On::Host
    }
    /// The primitive, called on one lane's buffers with the other arguments.
    #[doc(hidden)]
    fn __primal(&mut self, dst: &mut X, src: &Y) -> Result<()>;

    /// Forward (tangent) rule: runs the copy (not when `dst` is `DuplicatedOnly`), then for each
    /// lane `k`: `d_dst[k] ← d_src[k]` through the primitive itself, or `d_dst[k] ← 0` when `src`
    /// is `Const`.
    fn forward<D: DstArg<X>, S: SrcArg<Y>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        copy_forward(self.__on(), dst, src, |d: &mut X, s: &Y| {
            Ran(self.__primal(d, s))
        })
    }

    /// Augmented primal: runs the copy (not when `dst` is `DuplicatedOnly`) and returns the tape
    /// for [`Self::reverse`].
    fn augmented_primal<D: DstArg<X>, S: SrcArg<Y>>(&mut self, dst: D, src: S) -> Result<CopyTape>
    where
        D::Width: SameWidth<S::Width>,
    {
        let on = self.__on();
        copy_augmented_primal(on, dst, src, |d: &mut X, s: &Y| Ran(self.__primal(d, s)))
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments: for
    /// each lane `k`, in order on the copy's stream, `d_src[k] += d_dst[k]` if `src` is active,
    /// then `d_dst[k] ← 0` (one fused pass). An exact self-copy is the identity.
    fn reverse<D: DstArg<X>, S: SrcArg<Y>>(&mut self, tape: CopyTape, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        copy_reverse(self.__on(), tape, dst, src)
    }
}

/// The rules of a `copy` through raw pointers (`dst: *mut T ← src: *const T`, with the memory
/// kinds the attribute declares and the offsets and length the primitive takes). As
/// [`CopyRule`], with `unsafe` methods.
///
/// # Safety
/// Implementing: `__plan` describes the call truthfully (the stream, memory kinds, offsets,
/// lengths and boxes the primitive really uses), since the methods trust it; the macro's
/// implementations do.
///
/// Calling every method: the contract of the primitive, for the primal pointers and again for each
/// lane's shadow pointers; every shadow pointer valid and aligned for `offset + n` elements of
/// its side's declared memory kind (shadows are read and written); no shadow aliasing a primal
/// or another lane's shadow (a lane's `dst` and `src` shadows may be the same range, never a
/// partial overlap); every pointer valid, and the memory untouched by anything else, until the
/// work the call enqueues on the copy's stream has completed.
pub unsafe trait RawCopyRule<'s, T: Differentiable> {
    /// The stream, memory kinds, offsets and length of the call.
    #[doc(hidden)]
    fn __plan(&self) -> (On<'s>, PtrCopy);
    /// The primitive, called on one lane's pointers with the other arguments.
    ///
    /// # Safety
    /// The primitive's contract.
    #[doc(hidden)]
    unsafe fn __primal(&mut self, dst: *mut T, src: *const T) -> Result<()>;

    /// Forward rule; see [`CopyRule::forward`].
    ///
    /// # Safety
    /// See the trait.
    unsafe fn forward<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, shape) = self.__plan();
        let primal = |d: *mut T, s: *const T| Ran(unsafe { self.__primal(d, s) });
        unsafe { ptr_copy_forward(on, shape, dst, src, primal) }
    }

    /// Augmented primal; see [`CopyRule::augmented_primal`].
    ///
    /// # Safety
    /// See the trait.
    unsafe fn augmented_primal<D: DstPtr<T>, S: SrcPtr<T>>(
        &mut self,
        dst: D,
        src: S,
    ) -> Result<CopyTape>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, shape) = self.__plan();
        let primal = |d: *mut T, s: *const T| Ran(unsafe { self.__primal(d, s) });
        unsafe { ptr_copy_augmented_primal(on, shape, dst, src, primal) }
    }

    /// Reverse rule; see [`CopyRule::reverse`].
    ///
    /// # Safety
    /// See the trait.
    unsafe fn reverse<D: DstPtr<T>, S: SrcPtr<T>>(
        &mut self,
        tape: CopyTape,
        dst: D,
        src: S,
    ) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, shape) = self.__plan();
        unsafe { ptr_copy_reverse(on, shape, tape, dst, src) }
    }
}

/// The rules of a two-buffer region rule on references: `copy2d`, `copy3d`, a `fill` from a
/// value held in a one-element buffer, a `copy` with `restore` or with a CUDA array side. For
/// each lane `k`, with `R` the destination's box (nothing outside it is read or written):
/// forward `d_dst[k][R] ← d_src[k][R']` (0 for a `Const` source); reverse
/// `d_src[k][R'] += d_dst[k][R]` then `d_dst[k][R] ← 0`, then, with `restore`, the old
/// destination box written back. Arguments and errors as [`CopyRule`] (and `BadRegion`).
pub trait RegionRule<'s, X: ShadowMemory + ?Sized, Y: ShadowMemory<Elem = X::Elem> + ?Sized> {
    /// The stream, the boxes, and whether the reverse restores the destination.
    #[doc(hidden)]
    fn __plan(&self) -> (On<'s>, Boxes, bool);
    /// The primitive, called on one lane's buffers with the other arguments.
    #[doc(hidden)]
    fn __primal(&mut self, dst: &mut X, src: &Y) -> Result<()>;

    /// Forward (tangent) rule.
    fn forward<D: DstArg<X>, S: SrcArg<Y>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, boxes, _) = self.__plan();
        region_forward(on, boxes, dst, src, |d: &mut X, s: &Y| {
            Ran(self.__primal(d, s))
        })
    }

    /// Augmented primal: runs the primitive (saving the old box first with `restore`) and returns
    /// the tape for [`Self::reverse`].
    fn augmented_primal<D: DstArg<X>, S: SrcArg<Y>>(
        &mut self,
        dst: D,
        src: S,
    ) -> Result<RegionTape<<X as ShadowRead>::Elem>>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, boxes, restore) = self.__plan();
        let primal = |d: &mut X, s: &Y| Ran(self.__primal(d, s));
        region_augmented_primal(on, boxes, restore, dst, src, primal)
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments.
    fn reverse<D: DstArg<X>, S: SrcArg<Y>>(
        &mut self,
        tape: RegionTape<<X as ShadowRead>::Elem>,
        dst: D,
        src: S,
    ) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, boxes, _) = self.__plan();
        region_reverse(on, boxes, tape, dst, src)
    }
}

/// The rules of a two-buffer region rule through raw pointers; as [`RegionRule`], with `unsafe`
/// methods whose contract is [`RawCopyRule`]'s, each pointer valid for its box.
///
/// # Safety
/// Implementing: `__plan` describes the call truthfully (the stream, memory kinds, offsets,
/// lengths and boxes the primitive really uses), since the methods trust it; the macro's
/// implementations do. Calling: see each method.
pub unsafe trait RawRegionRule<'s, T: Differentiable> {
    /// The stream, memory kinds and boxes, and whether the reverse restores the destination.
    #[doc(hidden)]
    fn __plan(&self) -> (On<'s>, RawRegion, bool);
    /// The primitive, called on one lane's pointers with the other arguments.
    ///
    /// # Safety
    /// The primitive's contract.
    #[doc(hidden)]
    unsafe fn __primal(&mut self, dst: *mut T, src: *const T) -> Result<()>;

    /// Forward rule; see [`RegionRule::forward`].
    ///
    /// # Safety
    /// See [`RawCopyRule`].
    unsafe fn forward<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, shape, _) = self.__plan();
        let primal = |d: *mut T, s: *const T| Ran(unsafe { self.__primal(d, s) });
        unsafe { ptr_region_forward(on, shape, dst, src, primal) }
    }

    /// Augmented primal; see [`RegionRule::augmented_primal`].
    ///
    /// # Safety
    /// See [`RawCopyRule`].
    unsafe fn augmented_primal<D: DstPtr<T>, S: SrcPtr<T>>(
        &mut self,
        dst: D,
        src: S,
    ) -> Result<RegionTape<T>>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, shape, restore) = self.__plan();
        let primal = |d: *mut T, s: *const T| Ran(unsafe { self.__primal(d, s) });
        unsafe { ptr_region_augmented_primal(on, shape, restore, dst, src, primal) }
    }

    /// Reverse rule; see [`RegionRule::reverse`].
    ///
    /// # Safety
    /// See [`RawCopyRule`].
    unsafe fn reverse<D: DstPtr<T>, S: SrcPtr<T>>(
        &mut self,
        tape: RegionTape<T>,
        dst: D,
        src: S,
    ) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, shape, _) = self.__plan();
        unsafe { ptr_region_reverse(on, shape, tape, dst, src) }
    }
}
