//! The rule objects the array bridges drive, behind one trait ([`AdRefRule`]): a two-buffer
//! region rule on references ([`RefRegion`]) and a memset ([`RefMemset`]), taking the
//! activities the sides resolve to; and the fill's wrapper ([`RefFill`], driven by `fill.rs`).

use crate::activity::{Const, Duplicated};
use crate::error::{Error, Result};
use crate::memory::ShadowMemory;
use crate::rules::{MemsetRule, RegionRule, RegionTape};

/// A destination as the rule takes it: both (`Duplicated`), or the primal alone (`Const`).
pub enum DstAct<'a, X: ?Sized> {
    /// Active.
    Dup(&'a mut X, &'a mut X),
    /// Inactive.
    Const(&'a mut X),
}

/// A source as the rule takes it.
pub enum SrcAct<'a, Y: ?Sized> {
    /// Active.
    Dup(&'a Y, &'a mut Y),
    /// Inactive.
    Const(&'a Y),
}

/// A rule object on references with an array side, as the bridges drive it: a two-buffer region
/// rule ([`RefRegion`]) or a memset ([`RefMemset`]; no source). Implemented here only.
pub trait AdRefRule<'s, X: ?Sized, Y: ?Sized> {
    /// What the augmented primal hands to the reverse (boxed in the bridges' `Tape`).
    type Tape: 'static;
    /// Whether the rule has a source.
    const SOURCE: bool;
    /// The rule's forward rule (`src` is `None` exactly when the rule has no source).
    fn fwd(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<()>;
    /// The rule's augmented primal.
    fn aug(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<Self::Tape>;
    /// The rule's reverse, with the tape of [`AdRefRule::aug`].
    fn rev(
        &mut self,
        tape: Self::Tape,
        dst: DstAct<'_, X>,
        src: Option<SrcAct<'_, Y>>,
    ) -> Result<()>;
}

/// A two-buffer region rule on references (`RegionRule`): a copy to, from or between arrays.
pub struct RefRegion<R>(pub R);

/// A memset of an array (`MemsetRule`).
pub struct RefMemset<R>(pub R);

fn no_source() -> Error {
    Error::UnsupportedKinds {
        op: "a std::autodiff bridge",
        dst: crate::memory::MemoryKind::Array,
        src: crate::memory::MemoryKind::Array,
        why: "the rule's source is missing, or given to a rule that has none",
    }
}

/// Calls `$m` of a two-buffer rule on every activity pattern.
macro_rules! region_call {
    ($rule:expr, $m:ident($($tape:expr,)?) $dst:expr, $src:expr) => {
        match ($dst, $src) {
            (DstAct::Dup(d, dd), Some(SrcAct::Dup(s, ds))) => {
                $rule.$m($($tape,)? Duplicated::new(d, dd), Duplicated::new(s, ds))
            }
            (DstAct::Dup(d, dd), Some(SrcAct::Const(s))) => {
                $rule.$m($($tape,)? Duplicated::new(d, dd), Const(s))
            }
            (DstAct::Const(d), Some(SrcAct::Const(s))) => $rule.$m($($tape,)? Const(d), Const(s)),
            // Refused by the bridges before (`pattern`): the source's derivative would be lost.
            (DstAct::Const(_), Some(SrcAct::Dup(..))) | (_, None) => Err(no_source()),
        }
    };
}

impl<'s, X, Y, R> AdRefRule<'s, X, Y> for RefRegion<R>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    R: RegionRule<'s, X, Y>,
{
    type Tape = RegionTape<X::Elem>;
    const SOURCE: bool = true;
    fn fwd(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<()> {
        region_call!(self.0, forward() dst, src)
    }
    fn aug(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<Self::Tape> {
        region_call!(self.0, augmented_primal() dst, src)
    }
    fn rev(
        &mut self,
        tape: Self::Tape,
        dst: DstAct<'_, X>,
        src: Option<SrcAct<'_, Y>>,
    ) -> Result<()> {
        region_call!(self.0, reverse(tape,) dst, src)
    }
}

impl<'s, X, Y, R> AdRefRule<'s, X, Y> for RefMemset<R>
where
    X: ShadowMemory + ?Sized,
    Y: ?Sized,
    R: MemsetRule<'s, X>,
{
    type Tape = RegionTape<X::Elem>;
    const SOURCE: bool = false;
    fn fwd(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<()> {
        match (dst, src) {
            (_, Some(_)) => Err(no_source()),
            (DstAct::Dup(d, dd), None) => self.0.forward(Duplicated::new(d, dd)),
            (DstAct::Const(d), None) => self.0.forward(Const(d)),
        }
    }
    fn aug(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<Self::Tape> {
        match (dst, src) {
            (_, Some(_)) => Err(no_source()),
            (DstAct::Dup(d, dd), None) => self.0.augmented_primal(Duplicated::new(d, dd)),
            (DstAct::Const(d), None) => self.0.augmented_primal(Const(d)),
        }
    }
    fn rev(
        &mut self,
        tape: Self::Tape,
        dst: DstAct<'_, X>,
        src: Option<SrcAct<'_, Y>>,
    ) -> Result<()> {
        match (dst, src) {
            (_, Some(_)) => Err(no_source()),
            (DstAct::Dup(d, dd), None) => self.0.reverse(tape, Duplicated::new(d, dd)),
            (DstAct::Const(d), None) => self.0.reverse(tape, Const(d)),
        }
    }
}

/// A fill of an array by value (`FillRule`), for the fill bridges (`fill.rs`).
pub struct RefFill<R>(pub R);
