//! One side of a region rule's call (`dst` or `src`): its primal and its lanes' shadows, seen
//! alike whether the rule takes slices ([`Dst`], [`Src`]) or raw pointers ([`Raw`], built from a
//! [`RawRegion`]), so that [`check_call`](super::check_call) and the bodies are written once.

use super::Boxes;
use crate::activity::{DstArg, SrcArg};
use crate::element::Differentiable;
use crate::memory::raw::RawShadow;
use crate::memory::raw::lanes::BoxViews;
use crate::memory::{MemoryKind, ShadowMemory, ShadowRead};
use crate::region::Pitched;
use core::marker::PhantomData;

/// The memory kinds and boxes of a raw-pointer region rule: each pointer is the base its box's
/// offset counts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRegion {
    /// Declared kind of `dst` (and of its shadows).
    pub dst_kind: MemoryKind,
    /// Declared kind of `src` (and of its shadows); unused without a source.
    pub src_kind: MemoryKind,
    /// The destination's box.
    pub dst: Pitched,
    /// The source's box, for copies.
    pub src: Option<Pitched>,
}

impl RawRegion {
    pub(crate) fn boxes(&self) -> Boxes {
        Boxes {
            dst: Some(self.dst),
            src: self.src,
            ..Boxes::WHOLE
        }
    }
}

/// One side of a call (`dst` or `src`): its primal and its lanes' shadows.
pub(crate) trait Side {
    /// The buffer type of the primal: only read on a source (a read-only `CudaView` may be one).
    type Primal: ShadowRead + ?Sized;
    /// The buffer type of every shadow, written by the shadow work.
    type Buf: ShadowMemory<Elem = <Self::Primal as ShadowRead>::Elem> + ?Sized;
    /// Lanes (0 for `Const`).
    fn width(&self) -> usize;
    fn primal(&self) -> &Self::Primal;
    fn lane(&self, k: usize) -> Option<&Self::Buf>;
    fn lane_mut(&mut self, k: usize) -> Option<&mut Self::Buf>;
}

/// A slice rule's destination as a [`Side`].
pub(crate) struct Dst<X: ?Sized, D>(pub(crate) D, PhantomData<fn(&X)>);
impl<X: ShadowMemory + ?Sized, D: DstArg<X>> Dst<X, D> {
    pub(crate) fn new(d: D) -> Self {
        Dst(d, PhantomData)
    }
    pub(crate) fn primal_mut(&mut self) -> &mut X {
        self.0.primal_mut()
    }
}
impl<X: ShadowMemory + ?Sized, D: DstArg<X>> Side for Dst<X, D> {
    type Primal = X;
    type Buf = X;
    fn width(&self) -> usize {
        D::WIDTH
    }
    fn primal(&self) -> &X {
        self.0.primal()
    }
    fn lane(&self, k: usize) -> Option<&X> {
        self.0.lane(k)
    }
    fn lane_mut(&mut self, k: usize) -> Option<&mut X> {
        self.0.lane_mut(k)
    }
}

/// A slice rule's source as a [`Side`]: its shadows may be of another type than its primal.
pub(crate) struct Src<Y: ?Sized, S>(pub(crate) S, PhantomData<fn(&Y)>);
impl<Y, S> Src<Y, S>
where
    Y: ShadowRead + ?Sized,
    S: SrcArg<Y, Shadow: ShadowMemory<Elem = Y::Elem>>,
{
    pub(crate) fn new(s: S) -> Self {
        Src(s, PhantomData)
    }
    /// Shadow `k` as the primal's type, for the primitive (see [`SrcArg::lane_as_primal`]).
    pub(crate) fn lane_as_primal(&self, k: usize) -> Option<&Y> {
        self.0.lane_as_primal(k)
    }
}
impl<Y, S> Side for Src<Y, S>
where
    Y: ShadowRead + ?Sized,
    S: SrcArg<Y, Shadow: ShadowMemory<Elem = Y::Elem>>,
{
    type Primal = Y;
    type Buf = S::Shadow;
    fn width(&self) -> usize {
        S::WIDTH
    }
    fn primal(&self) -> &Y {
        self.0.primal()
    }
    fn lane(&self, k: usize) -> Option<&S::Shadow> {
        self.0.lane(k)
    }
    fn lane_mut(&mut self, k: usize) -> Option<&mut S::Shadow> {
        self.0.lane_mut(k)
    }
}

/// A pointer rule's side: views from each pointer's base to the end of its box, made by the raw
/// rule's method (`crate::memory::raw::lanes`) under its `unsafe` contract.
pub(crate) type Raw<T> = BoxViews<T>;

impl<T: Differentiable> Side for BoxViews<T> {
    type Primal = RawShadow<T>;
    type Buf = RawShadow<T>;
    fn width(&self) -> usize {
        self.lanes.len()
    }
    fn primal(&self) -> &RawShadow<T> {
        &self.primal
    }
    fn lane(&self, k: usize) -> Option<&RawShadow<T>> {
        self.lanes.get(k)
    }
    fn lane_mut(&mut self, k: usize) -> Option<&mut RawShadow<T>> {
        self.lanes.get_mut(k)
    }
}
