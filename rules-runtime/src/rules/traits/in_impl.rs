//! The rule object of a rule on an associated function (`in_impl`). A struct cannot be declared
//! inside an `impl` block, so there the generated `name_rule` is an associated function that
//! returns an `InImpl`: the call's plan and a closure calling `Self::name`, which implements the
//! rule trait of the kind like a generated struct does.

use super::{CollectiveRule, CopyRule, FillRule, MemsetRule, RecvRule, RegionRule, SendRule};
use crate::collective::Collective;
use crate::error::Result;
use crate::memory::{ShadowMemory, ShadowRead};
use crate::nccl::{CollectiveDst, CollectiveSrc};
use crate::ops::On;
use crate::rules::{Boxes, PrimalOutcome};

/// A rule object made of a plan and a closure calling the primitive (see the module docs).
/// Made only by generated code, through its `unsafe` constructor (`InImpl::new`, declared with the
/// raw-pointer rule traits in `crate::memory::raw::rules`, which trust its plan).
pub struct InImpl<P, F> {
    pub(crate) plan: P,
    pub(crate) primal: F,
    pub(crate) names: crate::rules::RuleNames,
}

impl<P, F> InImpl<P, F> {
    /// The rule with the primitive's and its parameters' names, for the checked mode's errors.
    #[doc(hidden)]
    pub fn __named(mut self, names: &'static str) -> Self {
        self.names = crate::rules::RuleNames::unpack(names);
        self
    }
}

/// Names a lifetime in an opaque return type (`impl Trait + Captures<'a>`), so that it may
/// capture it in every edition.
pub trait Captures<'a> {}
impl<T: ?Sized> Captures<'_> for T {}

impl<'s, X, Y, F, R> CopyRule<'s, X, Y> for InImpl<On<'s>, F>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    fn __on(&self) -> On<'s> {
        self.plan
    }
    fn __primal(&mut self, dst: &mut X, src: &Y) -> Result<()> {
        (self.primal)(dst, src).into_result()
    }
    fn __names(&self) -> crate::rules::RuleNames {
        self.names
    }
}

impl<'s, X, Y, F, R> RegionRule<'s, X, Y> for InImpl<(On<'s>, Boxes, bool), F>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> (On<'s>, Boxes, bool) {
        self.plan
    }
    fn __primal(&mut self, dst: &mut X, src: &Y) -> Result<()> {
        (self.primal)(dst, src).into_result()
    }
    fn __names(&self) -> crate::rules::RuleNames {
        self.names
    }
}

impl<'s, X, F, R> MemsetRule<'s, X> for InImpl<(On<'s>, Boxes, bool), F>
where
    X: ShadowMemory + ?Sized,
    F: FnMut(&mut X) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> (On<'s>, Boxes, bool) {
        self.plan
    }
    fn __primal(&mut self, dst: &mut X) -> Result<()> {
        (self.primal)(dst).into_result()
    }
    fn __names(&self) -> crate::rules::RuleNames {
        self.names
    }
}

impl<'s, X, F, R> FillRule<'s, X> for InImpl<(On<'s>, Boxes, bool), F>
where
    X: ShadowMemory + ?Sized,
    F: FnMut(&mut X, X::Elem) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> (On<'s>, Boxes, bool) {
        self.plan
    }
    fn __primal(&mut self, dst: &mut X, value: X::Elem) -> Result<()> {
        (self.primal)(dst, value).into_result()
    }
    fn __names(&self) -> crate::rules::RuleNames {
        self.names
    }
}

impl<'s, X, Y, F, R> CollectiveRule<'s, X, Y> for InImpl<Collective<'s>, F>
where
    X: CollectiveDst + ?Sized,
    Y: CollectiveSrc<Elem = X::Elem> + ?Sized,
    F: FnMut(&mut X, &Y) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> Collective<'s> {
        self.plan
    }
    fn __primal(&mut self, y: &mut X, x: &Y) -> Result<()> {
        (self.primal)(y, x).into_result()
    }
    fn __names(&self) -> crate::rules::RuleNames {
        self.names
    }
}

impl<'s, Y, F, R> SendRule<'s, Y> for InImpl<Collective<'s>, F>
where
    Y: CollectiveSrc + ?Sized,
    F: FnMut(&Y) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> Collective<'s> {
        self.plan
    }
    fn __primal(&mut self, x: &Y) -> Result<()> {
        (self.primal)(x).into_result()
    }
    fn __names(&self) -> crate::rules::RuleNames {
        self.names
    }
}

impl<'s, X, F, R> RecvRule<'s, X> for InImpl<Collective<'s>, F>
where
    X: CollectiveDst + ?Sized,
    F: FnMut(&mut X) -> R,
    R: PrimalOutcome,
{
    fn __plan(&self) -> Collective<'s> {
        self.plan
    }
    fn __primal(&mut self, y: &mut X) -> Result<()> {
        (self.primal)(y).into_result()
    }
    fn __names(&self) -> crate::rules::RuleNames {
        self.names
    }
}
