//! The traits of two-buffer rules (`dst ← src`): whole copies and region copies, on references
//! (the raw-pointer ones are `crate::memory::raw::rules`).

use crate::activity::{DstArg, SameWidth, SrcArg};
use crate::error::Result;
use crate::memory::{ShadowMemory, ShadowRead};
use crate::ops::On;
use crate::rules::{
    Boxes, CopyTape, RegionTape, copy_augmented_primal, copy_forward, copy_reverse,
    region_augmented_primal, region_forward, region_reverse,
};
use crate::rules::{Ran, RuleNames};

/// The rules of a `copy` of a whole buffer, `dst: &mut X ← src: &Y`, as `#[derivative_rule(copy)]`
/// generates them (`name_rule`, holding the primitive's other arguments).
///
/// `dst` and `src` are activities of the same batch width (or one of them `Const`): `Const(x)`,
/// `Duplicated::new(x, dx)`, `Duplicated::batch(x, [dx1, dx2, dx3])`, `DuplicatedOnly::new(x, dx)`.
/// The source's primal is only read: it may be a read-only `&CudaView`, whose shadows are then
/// writable cudarc buffers (`Duplicated::new(&x_view, &mut dx_view)`, `dx_view: CudaViewMut`).
/// Every argument and every lane is checked before the first write (lengths, overlaps, memory
/// kinds, streams, contexts, the tape), so such an `Err` changes nothing; `Error::Primal` (the
/// primitive failed) and `Error::Driver` report a failure of the work itself.
pub trait CopyRule<'s, X: ShadowMemory + ?Sized, Y: ShadowRead<Elem = X::Elem> + ?Sized> {
    /// The stream that orders the shadow work (the host when the primitive has none).
    #[doc(hidden)]
    fn __on(&self) -> On<'s> {
        On::Host
    }
    /// The primitive, called on one lane's buffers with the other arguments.
    #[doc(hidden)]
    fn __primal(&mut self, dst: &mut X, src: &Y) -> Result<()>;
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

    /// Forward (tangent) rule: runs the copy (not when `dst` is `DuplicatedOnly`), then for each
    /// lane `k`: `d_dst[k] ← d_src[k]` through the primitive itself (by the runtime when the
    /// shadow is of another type than the primal, as for a `&CudaView` source), or
    /// `d_dst[k] ← 0` when `src` is `Const`.
    fn forward<D: DstArg<X>, S: SrcArg<Y>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
        S::Shadow: ShadowMemory<Elem = X::Elem>,
    {
        copy_forward(self.__on(), self.__names(), dst, src, |d: &mut X, s: &Y| {
            Ran(self.__primal(d, s))
        })
    }

    /// Augmented primal: runs the copy (not when `dst` is `DuplicatedOnly`) and returns the tape
    /// for [`Self::reverse`].
    fn augmented_primal<D: DstArg<X>, S: SrcArg<Y>>(&mut self, dst: D, src: S) -> Result<CopyTape>
    where
        D::Width: SameWidth<S::Width>,
        S::Shadow: ShadowMemory<Elem = X::Elem>,
    {
        let on = self.__on();
        copy_augmented_primal(on, self.__names(), dst, src, |d: &mut X, s: &Y| {
            Ran(self.__primal(d, s))
        })
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments: for
    /// each lane `k`, in order on the copy's stream, `d_src[k] += d_dst[k]` if `src` is active,
    /// then `d_dst[k] ← 0` (one fused pass). An exact self-copy is the identity.
    fn reverse<D: DstArg<X>, S: SrcArg<Y>>(&mut self, tape: CopyTape, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
        S::Shadow: ShadowMemory<Elem = X::Elem>,
    {
        copy_reverse(self.__on(), tape, dst, src)
    }
}

/// The rules of a two-buffer region rule on references: `copy2d`, `copy3d`, a `fill` from a
/// value held in a one-element buffer, a `copy` with `restore` or with a CUDA array side. For
/// each lane `k`, with `R` the destination's box (nothing outside it is read or written):
/// forward `d_dst[k][R] ← d_src[k][R']` (0 for a `Const` source); reverse
/// `d_src[k][R'] += d_dst[k][R]` then `d_dst[k][R] ← 0`, then, with `restore`, the old
/// destination box written back. Arguments and errors as [`CopyRule`] (and `BadRegion`).
pub trait RegionRule<'s, X: ShadowMemory + ?Sized, Y: ShadowRead<Elem = X::Elem> + ?Sized> {
    /// The stream, the boxes, and whether the reverse restores the destination.
    #[doc(hidden)]
    fn __plan(&self) -> (On<'s>, Boxes, bool);
    /// The primitive, called on one lane's buffers with the other arguments.
    #[doc(hidden)]
    fn __primal(&mut self, dst: &mut X, src: &Y) -> Result<()>;
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

    /// Forward (tangent) rule.
    fn forward<D: DstArg<X>, S: SrcArg<Y>>(&mut self, dst: D, src: S) -> Result<()>
    where
        D::Width: SameWidth<S::Width>,
        S::Shadow: ShadowMemory<Elem = X::Elem>,
    {
        let (on, boxes, _) = self.__plan();
        region_forward(on, (boxes, self.__names()), dst, src, |d: &mut X, s: &Y| {
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
        S::Shadow: ShadowMemory<Elem = X::Elem>,
    {
        let (on, boxes, restore) = self.__plan();
        let names = self.__names();
        let primal = |d: &mut X, s: &Y| Ran(self.__primal(d, s));
        region_augmented_primal(on, (boxes, names), restore, dst, src, primal)
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
        S::Shadow: ShadowMemory<Elem = X::Elem>,
    {
        let (on, boxes, restore) = self.__plan();
        region_reverse(on, (boxes, restore), tape, dst, src)
    }
}
