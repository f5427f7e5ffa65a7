//! The rule traits of pointer rules (`RawCopyRule`, `RawRegionRule`, `RawMemsetRule`,
//! `RawFillRule`): the one place where a rule's raw pointers become views. Their methods are
//! `unsafe` (the caller vouches for the pointers); each makes the call's views under that contract
//! ([`super::lanes`]) and hands them to the safe bodies in `crate::rules`, with the primitive
//! wrapped in a closure that calls it under the same contract. The rule object of a pointer rule
//! inside an `impl` block ([`InImpl`]) implements them here too, and its constructor is here: it
//! vouches for the plan these methods trust.

use super::lanes;
use crate::activity::{DstPtr, ForwardValue, ReverseValue, SameWidth, SrcPtr};
use crate::element::Differentiable;
use crate::error::Result;
use crate::ops::On;
use crate::rules::{
    CopyTape, FillGradient, InImpl, PrimalOutcome, PtrCopy, Ran, RawRegion, RegionTape, RuleNames,
    ptr_copy_augmented_primal, ptr_copy_forward, ptr_copy_reverse, ptr_fill_augmented_primal,
    ptr_fill_forward, ptr_fill_reverse, ptr_memset_augmented_primal, ptr_memset_forward,
    ptr_memset_reverse, ptr_region_augmented_primal, ptr_region_forward, ptr_region_reverse,
};

/// The rules of a `copy` through raw pointers (`dst: *mut T ← src: *const T`, with the memory
/// kinds the attribute declares and the offsets and length the primitive takes). As
/// [`CopyRule`](crate::CopyRule), with `unsafe` methods.
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
    /// The primitive's and its parameters' names, for the errors that name them (the checked
    /// mode's, a moved destination's): a constant, which the attribute writes, packed as
    /// `"rule\0dst\0src"` (see `RuleNames::unpack`).
    #[doc(hidden)]
    const __NAMES: &'static str = "";
    /// The names of this rule object: [`Self::__NAMES`], or those an `InImpl` holds.
    #[doc(hidden)]
    fn __names(&self) -> RuleNames {
        const { RuleNames::unpack(Self::__NAMES) }
    }

    /// Forward rule; see [`CopyRule::forward`](crate::CopyRule::forward).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn forward<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, shape) = self.__plan();
        // SAFETY: the caller's contract covers every pointer for `offset + n` elements.
        let views = unsafe { lanes::copy_views(&shape, &dst, &src)? };
        // SAFETY (the closure): called on the primals or on one lane's shadows, each valid by the
        // caller's contract, as the primitive's contract asks.
        let names = self.__names();
        let primal = |d: *mut T, s: *const T| Ran(unsafe { self.__primal(d, s) });
        ptr_copy_forward(on, (shape, names), views, &dst, &src, primal)
    }

    /// Augmented primal; see [`CopyRule::augmented_primal`](crate::CopyRule::augmented_primal).
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
        // SAFETY: as in `forward`.
        let views = unsafe { lanes::copy_views(&shape, &dst, &src)? };
        // SAFETY (the closure): as in `forward`.
        let names = self.__names();
        let primal = |d: *mut T, s: *const T| Ran(unsafe { self.__primal(d, s) });
        ptr_copy_augmented_primal(on, (shape, names), views, &dst, &src, primal)
    }

    /// Reverse rule; see [`CopyRule::reverse`](crate::CopyRule::reverse).
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
        // SAFETY: as in `forward`.
        let views = unsafe { lanes::copy_views(&shape, &dst, &src)? };
        ptr_copy_reverse::<T, D>(on, shape, tape, views)
    }
}

/// The rules of a two-buffer region rule through raw pointers; as
/// [`RegionRule`](crate::RegionRule), with `unsafe` methods whose contract is [`RawCopyRule`]'s,
/// each pointer valid for its box (the rows of the box: the memory between them is never
/// touched, and may be in use elsewhere).
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
    /// The primitive's and its parameters' names, for the errors that name them (the checked
    /// mode's, a moved destination's): a constant, which the attribute writes, packed as
    /// `"rule\0dst\0src"` (see `RuleNames::unpack`).
    #[doc(hidden)]
    const __NAMES: &'static str = "";
    /// The names of this rule object: [`Self::__NAMES`], or those an `InImpl` holds.
    #[doc(hidden)]
    fn __names(&self) -> RuleNames {
        const { RuleNames::unpack(Self::__NAMES) }
    }

    /// Forward rule; see [`RegionRule::forward`](crate::RegionRule::forward).
    ///
    /// # Safety
    /// See [`RawCopyRule`].
    unsafe fn forward<D: DstPtr<T>, S: SrcPtr<T>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
    {
        let (on, shape, _) = self.__plan();
        // SAFETY: the caller's contract covers every pointer for its box.
        let views = unsafe {
            (
                lanes::dst_views(&shape, &dst)?,
                lanes::src_views(&shape, &src)?,
            )
        };
        // SAFETY (the closure): as in `RawCopyRule::forward`.
        let names = self.__names();
        let primal = |d: *mut T, s: *const T| Ran(unsafe { self.__primal(d, s) });
        ptr_region_forward(on, (shape, names), views, &dst, &src, primal)
    }

    /// Augmented primal; see [`RegionRule::augmented_primal`](crate::RegionRule::augmented_primal).
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
        // SAFETY: as in `forward`.
        let views = unsafe {
            (
                lanes::dst_views(&shape, &dst)?,
                lanes::src_views(&shape, &src)?,
            )
        };
        // SAFETY (the closure): as in `forward`.
        let names = self.__names();
        let primal = |d: *mut T, s: *const T| Ran(unsafe { self.__primal(d, s) });
        ptr_region_augmented_primal(on, (shape, names), restore, views, &dst, &src, primal)
    }

    /// Reverse rule; see [`RegionRule::reverse`](crate::RegionRule::reverse).
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
        let (on, shape, restore) = self.__plan();
        // SAFETY: as in `forward`.
        let views = unsafe {
            (
                lanes::dst_views(&shape, &dst)?,
                lanes::src_views(&shape, &src)?,
            )
        };
        ptr_region_reverse::<T, D>(on, (shape, restore), tape, views)
    }
}

/// The rules of a `memset` through a raw pointer; as [`MemsetRule`](crate::MemsetRule), with
/// `unsafe` methods whose contract is [`RawCopyRule`]'s, the pointer valid for its box.
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
    /// The primitive's and its parameters' names, for the errors that name them (the checked
    /// mode's, a moved destination's): a constant, which the attribute writes, packed as
    /// `"rule\0dst\0src"` (see `RuleNames::unpack`).
    #[doc(hidden)]
    const __NAMES: &'static str = "";
    /// The names of this rule object: [`Self::__NAMES`], or those an `InImpl` holds.
    #[doc(hidden)]
    fn __names(&self) -> RuleNames {
        const { RuleNames::unpack(Self::__NAMES) }
    }

    /// Forward rule; see [`MemsetRule::forward`](crate::MemsetRule::forward).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn forward<D: DstPtr<T>>(&mut self, dst: D) -> Result<()> {
        let (on, shape, _) = self.__plan();
        // SAFETY: the caller's contract covers every pointer for its box.
        let views = unsafe { lanes::dst_views(&shape, &dst)? };
        // SAFETY (the closure): as in `RawCopyRule::forward`.
        let names = self.__names();
        let primal = |d: *mut T| Ran(unsafe { self.__primal(d) });
        ptr_memset_forward(on, (shape, names), views, &dst, primal)
    }

    /// Augmented primal; see [`MemsetRule::augmented_primal`](crate::MemsetRule::augmented_primal).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn augmented_primal<D: DstPtr<T>>(&mut self, dst: D) -> Result<RegionTape<T>> {
        let (on, shape, restore) = self.__plan();
        // SAFETY: as in `forward`.
        let views = unsafe { lanes::dst_views(&shape, &dst)? };
        // SAFETY (the closure): as in `forward`.
        let names = self.__names();
        let primal = |d: *mut T| Ran(unsafe { self.__primal(d) });
        ptr_memset_augmented_primal(on, (shape, names), restore, views, &dst, primal)
    }

    /// Reverse rule; see [`MemsetRule::reverse`](crate::MemsetRule::reverse).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn reverse<D: DstPtr<T>>(&mut self, tape: RegionTape<T>, dst: D) -> Result<()> {
        let (on, shape, restore) = self.__plan();
        // SAFETY: as in `forward`.
        let views = unsafe { lanes::dst_views(&shape, &dst)? };
        ptr_memset_reverse::<T, D>(on, (shape, restore), tape, views)
    }
}

/// The rules of a `fill` by value through a raw pointer; as [`FillRule`](crate::FillRule), with
/// `unsafe` methods whose contract is [`RawCopyRule`]'s, the pointer valid for its box.
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
    /// The primitive's and its parameters' names, for the errors that name them (the checked
    /// mode's, a moved destination's): a constant, which the attribute writes, packed as
    /// `"rule\0dst\0src"` (see `RuleNames::unpack`).
    #[doc(hidden)]
    const __NAMES: &'static str = "";
    /// The names of this rule object: [`Self::__NAMES`], or those an `InImpl` holds.
    #[doc(hidden)]
    fn __names(&self) -> RuleNames {
        const { RuleNames::unpack(Self::__NAMES) }
    }

    /// Forward rule; see [`FillRule::forward`](crate::FillRule::forward).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn forward<D: DstPtr<T>, V: ForwardValue<T>>(&mut self, dst: D, value: V) -> Result<()>
    where
        D::Width: SameWidth<V::Width>,
    {
        let (on, shape, _) = self.__plan();
        // SAFETY: the caller's contract covers every pointer for its box.
        let views = unsafe { lanes::dst_views(&shape, &dst)? };
        // SAFETY (the closure): as in `RawCopyRule::forward`.
        let names = self.__names();
        let primal = |d: *mut T, v: T| Ran(unsafe { self.__primal(d, v) });
        ptr_fill_forward(on, (shape, names), views, &dst, value, primal)
    }

    /// Augmented primal; see [`FillRule::augmented_primal`](crate::FillRule::augmented_primal).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn augmented_primal<D: DstPtr<T>, V: ReverseValue<T>>(
        &mut self,
        dst: D,
        value: V,
    ) -> Result<RegionTape<T>> {
        let (on, shape, restore) = self.__plan();
        // SAFETY: as in `forward`.
        let views = unsafe { lanes::dst_views(&shape, &dst)? };
        // SAFETY (the closure): as in `forward`.
        let names = self.__names();
        let primal = |d: *mut T, v: T| Ran(unsafe { self.__primal(d, v) });
        ptr_fill_augmented_primal(on, (shape, restore, names), views, &dst, value, primal)
    }

    /// Reverse rule; see [`FillRule::reverse`](crate::FillRule::reverse).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn reverse<D: DstPtr<T>, V: ReverseValue<T>>(
        &mut self,
        tape: RegionTape<T>,
        dst: D,
        value: V,
    ) -> Result<FillGradient<V, T, D>> {
        let (on, shape, restore) = self.__plan();
        let _ = value;
        // SAFETY: as in `forward`.
        let views = unsafe { lanes::dst_views(&shape, &dst)? };
        ptr_fill_reverse::<T, D, V>(on, (shape, restore), tape, views)
    }
}

impl<P, F> InImpl<P, F> {
    /// The rule object of one call.
    ///
    /// # Safety
    /// When `F` calls an `unsafe` primitive on references (not raw pointers), the caller promises
    /// that every call of the rule's (safe) methods meets the primitive's contract; the generated
    /// `name_rule` is `unsafe` then, with that contract. For the raw-pointer rules, `plan`
    /// describes the call truthfully (the raw traits' implementing contract): the macro builds it
    /// from the call's own arguments.
    #[doc(hidden)]
    pub unsafe fn new(plan: P, primal: F) -> Self {
        InImpl {
            plan,
            primal,
            names: RuleNames::UNNAMED,
        }
    }
}

// SAFETY: the plan is the one `InImpl::new`'s caller vouched for, and the primal is called as
// the rule's own primitive.
unsafe impl<'s, T, F, R> RawCopyRule<'s, T> for InImpl<(On<'s>, PtrCopy), F>
where
    T: Differentiable,
    F: FnMut(*mut T, *const T) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> (On<'s>, PtrCopy) {
        self.plan
    }
    unsafe fn __primal(&mut self, dst: *mut T, src: *const T) -> Result<()> {
        (self.primal)(dst, src).into_result()
    }
    fn __names(&self) -> RuleNames {
        self.names
    }
}

// SAFETY: as above.
unsafe impl<'s, T, F, R> RawRegionRule<'s, T> for InImpl<(On<'s>, RawRegion, bool), F>
where
    T: Differentiable,
    F: FnMut(*mut T, *const T) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> (On<'s>, RawRegion, bool) {
        self.plan
    }
    unsafe fn __primal(&mut self, dst: *mut T, src: *const T) -> Result<()> {
        (self.primal)(dst, src).into_result()
    }
    fn __names(&self) -> RuleNames {
        self.names
    }
}

// SAFETY: as above.
unsafe impl<'s, T, F, R> RawMemsetRule<'s, T> for InImpl<(On<'s>, RawRegion, bool), F>
where
    T: Differentiable,
    F: FnMut(*mut T) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> (On<'s>, RawRegion, bool) {
        self.plan
    }
    unsafe fn __primal(&mut self, dst: *mut T) -> Result<()> {
        (self.primal)(dst).into_result()
    }
    fn __names(&self) -> RuleNames {
        self.names
    }
}

// SAFETY: as above.
unsafe impl<'s, T, F, R> RawFillRule<'s, T> for InImpl<(On<'s>, RawRegion, bool), F>
where
    T: Differentiable,
    F: FnMut(*mut T, T) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> (On<'s>, RawRegion, bool) {
        self.plan
    }
    unsafe fn __primal(&mut self, dst: *mut T, value: T) -> Result<()> {
        (self.primal)(dst, value).into_result()
    }
    fn __names(&self) -> RuleNames {
        self.names
    }
}
