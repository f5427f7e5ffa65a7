//! The traits of one-buffer region rules: `memset` (a bit pattern, not differentiable) and
//! `fill` by value, on references (the raw-pointer ones are `crate::memory::raw::rules`).

use crate::activity::{Activity, DstArg, ForwardValue, ReverseValue, SameWidth};
use crate::error::Result;
use crate::memory::{ShadowMemory, ShadowRead};
use crate::ops::On;
use crate::rules::{
    Boxes, RegionTape, fill_augmented_primal, fill_forward, fill_reverse, memset_augmented_primal,
    memset_forward, memset_reverse,
};
use crate::rules::{Ran, RuleNames};

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
    fn forward<D: DstArg<X>>(&mut self, dst: D) -> Result<()> {
        let (on, boxes, _) = self.__plan();
        memset_forward(on, (boxes, self.__names()), dst, |d: &mut X| {
            Ran(self.__primal(d))
        })
    }

    /// Augmented primal: returns the tape for [`Self::reverse`].
    fn augmented_primal<D: DstArg<X>>(&mut self, dst: D) -> Result<RegionTape<X::Elem>> {
        let (on, boxes, restore) = self.__plan();
        let names = self.__names();
        memset_augmented_primal(on, (boxes, names), restore, dst, |d: &mut X| {
            Ran(self.__primal(d))
        })
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments.
    fn reverse<D: DstArg<X>>(&mut self, tape: RegionTape<X::Elem>, dst: D) -> Result<()> {
        let (on, boxes, restore) = self.__plan();
        memset_reverse(on, (boxes, restore), tape, dst)
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
    fn forward<D: DstArg<X>, V: ForwardValue<X::Elem>>(&mut self, dst: D, value: V) -> Result<()>
    where
        D::Width: SameWidth<V::Width>,
    {
        let (on, boxes, _) = self.__plan();
        let names = self.__names();
        let primal = |d: &mut X, v: X::Elem| Ran(self.__primal(d, v));
        fill_forward(on, (boxes, names), dst, value, primal)
    }

    /// Augmented primal: returns the tape for [`Self::reverse`].
    fn augmented_primal<D: DstArg<X>, V: ReverseValue<X::Elem>>(
        &mut self,
        dst: D,
        value: V,
    ) -> Result<RegionTape<<X as ShadowRead>::Elem>> {
        let (on, boxes, restore) = self.__plan();
        let names = self.__names();
        let primal = |d: &mut X, v: X::Elem| Ran(self.__primal(d, v));
        fill_augmented_primal(on, (boxes, names), restore, dst, value, primal)
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments: the
    /// value's derivative, one per lane of `dst`.
    fn reverse<D: DstArg<X>, V: ReverseValue<X::Elem>>(
        &mut self,
        tape: RegionTape<<X as ShadowRead>::Elem>,
        dst: D,
        value: V,
    ) -> Result<FillGradient<V, X::Elem, D>> {
        let (on, boxes, restore) = self.__plan();
        fill_reverse(on, (boxes, restore), tape, dst, value)
    }
}
