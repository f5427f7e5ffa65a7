//! The traits of collective rules: NCCL collectives whose reverse is the adjoint collective.

use crate::activity::{DstArg, SameWidth, SrcArg};
use crate::collective::{
    Collective, CollectiveTape, collective_augmented_primal, collective_forward,
    collective_reverse, recv_augmented_primal, recv_forward, recv_reverse, send_augmented_primal,
    send_forward, send_reverse,
};
use crate::error::Result;
use crate::nccl::{CollectiveDst, CollectiveSrc, NcclElement};
use crate::rules::Ran;

/// The rules of a collective with an input `x: &Y` and an output `y: &mut X` (`broadcast`,
/// `reduce`, `all_gather`, `reduce_scatter`, `all_reduce`, `send_recv`): forward runs the
/// collective, then the same collective on each lane's tangents; reverse runs the adjoint
/// collective on each lane's cotangents into `d_x[k]`, then `d_y[k] ← 0`. Every rank must call a
/// rule with the same batch width, and not inside an NCCL group; the primal always runs (every
/// rank must enter the collective). Checked before anything moves: `NoNccl`, `NoDriver`,
/// `InvalidRank`, `LengthMismatch`, `ContextMismatch`, the tape.
pub trait CollectiveRule<'s, X: CollectiveDst + ?Sized, Y: CollectiveSrc<Elem = X::Elem> + ?Sized> {
    /// The communicator and the collective, with its ranks.
    #[doc(hidden)]
    fn __plan(&self) -> Collective<'s>;
    /// The primitive, called on the primal buffers with the other arguments.
    #[doc(hidden)]
    fn __primal(&mut self, y: &mut X, x: &Y) -> Result<()>;
    /// The primitive's and its parameters' names, for the errors that name them (the checked
    /// mode's, a moved destination's): a constant, which the attribute writes, packed as
    /// `"rule\0dst\0src"` (see `RuleNames::unpack`).
    #[doc(hidden)]
    const __NAMES: &'static str = "";
    /// The names of this rule object: [`Self::__NAMES`], or those an `InImpl` holds.
    #[doc(hidden)]
    fn __names(&self) -> crate::rules::RuleNames {
        const { crate::rules::RuleNames::unpack(Self::__NAMES) }
    }

    /// Forward (tangent) rule.
    fn forward<D: DstArg<X>, S: SrcArg<Y>>(&mut self, y: D, x: S) -> Result<()>
    where
        X::Elem: NcclElement,
        D::Width: SameWidth<S::Width>,
        S::Shadow: CollectiveDst<Elem = X::Elem>,
    {
        let c = self.__plan();
        collective_forward(c, y, x, |d: &mut X, s: &Y| Ran(self.__primal(d, s)))
    }

    /// Augmented primal: returns the tape for [`Self::reverse`].
    fn augmented_primal<D: DstArg<X>, S: SrcArg<Y>>(&mut self, y: D, x: S) -> Result<CollectiveTape>
    where
        X::Elem: NcclElement,
        D::Width: SameWidth<S::Width>,
        S::Shadow: CollectiveDst<Elem = X::Elem>,
    {
        let c = self.__plan();
        collective_augmented_primal(c, y, x, |d: &mut X, s: &Y| Ran(self.__primal(d, s)))
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments.
    fn reverse<D: DstArg<X>, S: SrcArg<Y>>(
        &mut self,
        tape: CollectiveTape,
        y: D,
        x: S,
    ) -> Result<()>
    where
        X::Elem: NcclElement,
        D::Width: SameWidth<S::Width>,
        S::Shadow: CollectiveDst<Elem = X::Elem>,
    {
        collective_reverse(self.__plan(), tape, y, x)
    }
}

/// The rules of `send` (an input `x: &Y` only): forward sends `x`, then each lane's tangent;
/// reverse receives each lane's cotangent from the peer and adds it into `d_x[k]`. As
/// [`CollectiveRule`].
pub trait SendRule<'s, Y: CollectiveSrc + ?Sized> {
    /// The communicator and the peer.
    #[doc(hidden)]
    fn __plan(&self) -> Collective<'s>;
    /// The primitive, called on the primal buffer with the other arguments.
    #[doc(hidden)]
    fn __primal(&mut self, x: &Y) -> Result<()>;
    /// The primitive's and its parameters' names, for the errors that name them (the checked
    /// mode's, a moved destination's): a constant, which the attribute writes, packed as
    /// `"rule\0dst\0src"` (see `RuleNames::unpack`).
    #[doc(hidden)]
    const __NAMES: &'static str = "";
    /// The names of this rule object: [`Self::__NAMES`], or those an `InImpl` holds.
    #[doc(hidden)]
    fn __names(&self) -> crate::rules::RuleNames {
        const { crate::rules::RuleNames::unpack(Self::__NAMES) }
    }

    /// Forward (tangent) rule.
    fn forward<S: SrcArg<Y>>(&mut self, x: S) -> Result<()>
    where
        S::Shadow: CollectiveDst<Elem = Y::Elem>,
    {
        let c = self.__plan();
        send_forward(c, x, |s: &Y| Ran(self.__primal(s)))
    }

    /// Augmented primal: returns the tape for [`Self::reverse`].
    fn augmented_primal<S: SrcArg<Y>>(&mut self, x: S) -> Result<CollectiveTape>
    where
        S::Shadow: CollectiveDst<Elem = Y::Elem>,
    {
        let c = self.__plan();
        send_augmented_primal(c, x, |s: &Y| Ran(self.__primal(s)))
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments.
    fn reverse<S: SrcArg<Y>>(&mut self, tape: CollectiveTape, x: S) -> Result<()>
    where
        S::Shadow: CollectiveDst<Elem = Y::Elem>,
    {
        send_reverse(self.__plan(), tape, x)
    }
}

/// The rules of `recv` (an output `y: &mut X` only): forward receives `y`, then each lane's
/// tangent; reverse sends each lane's cotangent back to the peer, then `d_y[k] ← 0`. As
/// [`CollectiveRule`].
pub trait RecvRule<'s, X: CollectiveDst + ?Sized> {
    /// The communicator and the peer.
    #[doc(hidden)]
    fn __plan(&self) -> Collective<'s>;
    /// The primitive, called on the primal buffer with the other arguments.
    #[doc(hidden)]
    fn __primal(&mut self, y: &mut X) -> Result<()>;
    /// The primitive's and its parameters' names, for the errors that name them (the checked
    /// mode's, a moved destination's): a constant, which the attribute writes, packed as
    /// `"rule\0dst\0src"` (see `RuleNames::unpack`).
    #[doc(hidden)]
    const __NAMES: &'static str = "";
    /// The names of this rule object: [`Self::__NAMES`], or those an `InImpl` holds.
    #[doc(hidden)]
    fn __names(&self) -> crate::rules::RuleNames {
        const { crate::rules::RuleNames::unpack(Self::__NAMES) }
    }

    /// Forward (tangent) rule.
    fn forward<D: DstArg<X>>(&mut self, y: D) -> Result<()> {
        let c = self.__plan();
        recv_forward(c, y, |d: &mut X| Ran(self.__primal(d)))
    }

    /// Augmented primal: returns the tape for [`Self::reverse`].
    fn augmented_primal<D: DstArg<X>>(&mut self, y: D) -> Result<CollectiveTape> {
        let c = self.__plan();
        recv_augmented_primal(c, y, |d: &mut X| Ran(self.__primal(d)))
    }

    /// Reverse rule, given the tape of [`Self::augmented_primal`] and the same arguments.
    fn reverse<D: DstArg<X>>(&mut self, tape: CollectiveTape, y: D) -> Result<()> {
        recv_reverse(self.__plan(), tape, y)
    }
}
