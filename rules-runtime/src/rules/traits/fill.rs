//! The traits of one-buffer region rules: `memset` (a bit pattern, not differentiable) and
//! `fill` by value, on references or raw pointers.

use crate::activity::{Activity, DstArg, DstPtr, ForwardValue, ReverseValue, SameWidth};
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::{ShadowMemory, ShadowRead};
use crate::ops::On;
use crate::rules::Ran;
use crate::rules::{
    Boxes, RawRegion, RegionTape, fill_augmented_primal, fill_forward, fill_reverse,
    memset_augmented_primal, memset_forward, memset_reverse, ptr_fill_augmented_primal,
    ptr_fill_forward, ptr_fill_reverse, ptr_memset_augmented_primal, ptr_memset_forward,
    ptr_memset_reverse,
};

/// The derivative a fill's reverse rule returns: one per lane of the destination (`[T; N]`), or
/// `()` for a `Const` value.
pub type FillGradient<V, T, D> = <V as ReverseValue<T>>::Gradient<<D as Activity>::Width>;

/// The rules of a `memset` on a reference, `dst: &mut X`: forward and reverse `d_dst[k][R] ← 0`
/// for each lane `k` (`R` the box; the whole buffer without one), then, with `restore`, the old
/// box written back. `dst` is an activity (`Const`, `Duplicated`, `DuplicatedOnly`); every
/// argument is checked before the first write.
pub trait MemsetRule<'s, X: ShadowMemory + ?Sized> {
    /// The stream, the boxes, and whether the reverse restores the destination.
    #[doc(hidden)]
    fn __plan(&self) -> (On<'s>, Boxes, bool);
    /// The primitive, called on one lane's buffer with the other arguments.
    #[doc(hidden)]
    fn __primal(&mut self, dst: &mut X) -> Result<()>;

    /// Forward (tangent) rule.
    fn forward<D: DstArg<X>>(&mut self, dst: D) -> Result<()> {
        let (on, boxes, _) = self.__plan();
        memset_forward(on, boxes, dst, |d: &mut X| Ran(self.__primal(d)))
    }

    /// Augmented primal: returns the tape for [`Self::reverse`].
    fn augmented_primal<D: DstArg<X>>(&mut self, dst: D) -> Result<RegionTape<X::Elem>> {
        let (on, boxes, restore) = self.__plan();
        memset_augmented_primal(on, boxes, restore, dst, |d: &mut X| Ran(self.__primal(d)))
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments.
    fn reverse<D: DstArg<X>>(&mut self, tape: RegionTape<X::Elem>, dst: D) -> Result<()> {
        let (on, boxes, _) = self.__plan();
        memset_reverse(on, boxes, tape, dst)
    }
}

/// The rules of a `memset` through a raw pointer; as [`MemsetRule`], with `unsafe` methods whose
/// contract is [`RawCopyRule`](crate::RawCopyRule)'s, the pointer valid for its box.
///
/// # Safety
/// Implementing: `__plan` describes the call truthfully (the stream, memory kinds, offsets,
/// lengths and boxes the primitive really uses), since the methods trust it; the macro's
/// implementations do. Calling: see each method.
pub unsafe trait RawMemsetRule<'s, T: Differentiable> {
    /// The stream, memory kind and box, and whether the reverse restores the destination.
    #[doc(hidden)]
    fn __plan(&self) -> (On<'s>, RawRegion, bool);
    /// The primitive, called on one lane's pointer with the other arguments.
    ///
    /// # Safety
    /// The primitive's contract.
    #[doc(hidden)]
    unsafe fn __primal(&mut self, dst: *mut T) -> Result<()>;

    /// Forward rule; see [`MemsetRule::forward`].
    ///
    /// # Safety
    /// See the trait.
    unsafe fn forward<D: DstPtr<T>>(&mut self, dst: D) -> Result<()> {
        let (on, shape, _) = self.__plan();
        unsafe { ptr_memset_forward(on, shape, dst, |d: *mut T| Ran(self.__primal(d))) }
    }

    /// Augmented primal; see [`MemsetRule::augmented_primal`].
    ///
    /// # Safety
    /// See the trait.
    unsafe fn augmented_primal<D: DstPtr<T>>(&mut self, dst: D) -> Result<RegionTape<T>> {
        let (on, shape, restore) = self.__plan();
        let primal = |d: *mut T| Ran(unsafe { self.__primal(d) });
        unsafe { ptr_memset_augmented_primal(on, shape, restore, dst, primal) }
    }

    /// Reverse rule; see [`MemsetRule::reverse`].
    ///
    /// # Safety
    /// See the trait.
    unsafe fn reverse<D: DstPtr<T>>(&mut self, tape: RegionTape<T>, dst: D) -> Result<()> {
        let (on, shape, _) = self.__plan();
        unsafe { ptr_memset_reverse(on, shape, tape, dst) }
    }
}

/// The rules of a `fill` by value on a reference, `dst: &mut X` filled with `value`: forward
/// `d_dst[k][R] ← d_v[k]` (0 for a `Const` value); reverse returns `d_v[k] = Σ_R d_dst[k]` per
/// lane (a deterministic sum) for an `Active` value, then `d_dst[k][R] ← 0`, then, with
/// `restore`, the old box written back. The value is `Const(v)` or `Dual` in forward mode,
/// `Const(v)` or `Active(v)` in reverse mode.
pub trait FillRule<'s, X: ShadowMemory + ?Sized> {
    /// The stream, the boxes, and whether the reverse restores the destination.
    #[doc(hidden)]
    fn __plan(&self) -> (On<'s>, Boxes, bool);
    /// The primitive, called on one lane's buffer and value with the other arguments.
    #[doc(hidden)]
    fn __primal(&mut self, dst: &mut X, value: X::Elem) -> Result<()>;

    /// Forward (tangent) rule.
    fn forward<D: DstArg<X>, V: ForwardValue<X::Elem>>(&mut self, dst: D, value: V) -> Result<()>
    where
        D::Width: SameWidth<V::Width>,
    {
        let (on, boxes, _) = self.__plan();
        let primal = |d: &mut X, v: X::Elem| Ran(self.__primal(d, v));
        fill_forward(on, boxes, dst, value, primal)
    }

    /// Augmented primal: returns the tape for [`Self::reverse`].
    fn augmented_primal<D: DstArg<X>, V: ReverseValue<X::Elem>>(
        &mut self,
        dst: D,
        value: V,
    ) -> Result<RegionTape<<X as ShadowRead>::Elem>> {
        let (on, boxes, restore) = self.__plan();
        let primal = |d: &mut X, v: X::Elem| Ran(self.__primal(d, v));
        fill_augmented_primal(on, boxes, restore, dst, value, primal)
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments: the
    /// value's derivative, one per lane of `dst`.
    fn reverse<D: DstArg<X>, V: ReverseValue<X::Elem>>(
        &mut self,
        tape: RegionTape<<X as ShadowRead>::Elem>,
        dst: D,
        value: V,
    ) -> Result<FillGradient<V, X::Elem, D>> {
        let (on, boxes, _) = self.__plan();
        fill_reverse(on, boxes, tape, dst, value)
    }
}

/// The rules of a `fill` by value through a raw pointer; as [`FillRule`], with `unsafe` methods
/// whose contract is [`RawCopyRule`](crate::RawCopyRule)'s, the pointer valid for its box.
///
/// # Safety
/// Implementing: `__plan` describes the call truthfully (the stream, memory kinds, offsets,
/// lengths and boxes the primitive really uses), since the methods trust it; the macro's
/// implementations do. Calling: see each method.
pub unsafe trait RawFillRule<'s, T: Differentiable> {
    /// The stream, memory kind and box, and whether the reverse restores the destination.
    #[doc(hidden)]
    fn __plan(&self) -> (On<'s>, RawRegion, bool);
    /// The primitive, called on one lane's pointer and value with the other arguments.
    ///
    /// # Safety
    /// The primitive's contract.
    #[doc(hidden)]
    unsafe fn __primal(&mut self, dst: *mut T, value: T) -> Result<()>;

    /// Forward rule; see [`FillRule::forward`].
    ///
    /// # Safety
    /// See the trait.
    unsafe fn forward<D: DstPtr<T>, V: ForwardValue<T>>(&mut self, dst: D, value: V) -> Result<()>
    where
        D::Width: SameWidth<V::Width>,
    {
        let (on, shape, _) = self.__plan();
        let primal = |d: *mut T, v: T| Ran(unsafe { self.__primal(d, v) });
        unsafe { ptr_fill_forward(on, shape, dst, value, primal) }
    }

    /// Augmented primal; see [`FillRule::augmented_primal`].
    ///
    /// # Safety
    /// See the trait.
    unsafe fn augmented_primal<D: DstPtr<T>, V: ReverseValue<T>>(
        &mut self,
        dst: D,
        value: V,
    ) -> Result<RegionTape<T>> {
        let (on, shape, restore) = self.__plan();
        let primal = |d: *mut T, v: T| Ran(unsafe { self.__primal(d, v) });
        unsafe { ptr_fill_augmented_primal(on, shape, restore, dst, value, primal) }
    }

    /// Reverse rule; see [`FillRule::reverse`].
    ///
    /// # Safety
    /// See the trait.
    unsafe fn reverse<D: DstPtr<T>, V: ReverseValue<T>>(
        &mut self,
        tape: RegionTape<T>,
        dst: D,
        value: V,
    ) -> Result<FillGradient<V, T, D>> {
        let (on, shape, _) = self.__plan();
        unsafe { ptr_fill_reverse(on, shape, tape, dst, value) }
    }
}
