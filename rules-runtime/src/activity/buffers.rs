//! Activities of buffers taken by reference (`&mut X`, `&X`): what a destination and a source of
//! a slice-shaped rule may be, and the shadow types a source's primal may have.

use super::{Activity, Const, Duplicated, DuplicatedOnly, sealed};
use crate::memory::ShadowRead;
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};

/// An activity-annotated destination buffer `&mut X` of a slice-shaped copy rule.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an activity for a destination of type `&mut {X}`",
    label = "expected `Const(&mut x)`, `Duplicated::new(&mut x, &mut dx)` or `DuplicatedOnly::new(&mut x, &mut dx)`",
    note = "the primal and every shadow of a destination are `&mut {X}`",
    note = "where the primitive takes a slice (`&mut [T]`), a `Vec`, array or `Box<[T]>` is given as one: `Duplicated::new(&mut y[..], &mut dy[..])`"
)]
pub trait DstArg<X: ?Sized>: Activity + sealed::OfRefs<X> {
    /// The primal buffer.
    fn primal(&self) -> &X;
    /// The primal buffer, for writing.
    fn primal_mut(&mut self) -> &mut X;
    /// Shadow `k`, if `k < WIDTH`.
    fn lane(&self, k: usize) -> Option<&X>;
    /// Shadow `k`, for writing, if `k < WIDTH`.
    fn lane_mut(&mut self, k: usize) -> Option<&mut X>;
}

/// An activity-annotated source buffer `&X` of a slice-shaped copy rule.
///
/// The primal of a source is only read, so it may be read-only memory: a `&CudaView<'_, T>` (what
/// cudarc's own copies take). Its shadows are written (the reverse accumulates into them), so they
/// are writable buffers of type [`SrcArg::Shadow`]: `&mut X` itself, or, for cudarc device memory,
/// another writable cudarc buffer of the same element (`Duplicated::new(&x_view, &mut dx_view)`
/// with `dx_view: CudaViewMut`, or `&mut dx` with `dx: CudaSlice`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an activity for a source of type `&{X}`",
    label = "expected `Const(&x)`, `Duplicated::new(&x, &mut dx)` or `DuplicatedOnly::new(&x, &mut dx)`",
    note = "a source's primal is `&{X}`, its shadows `&mut` (the reverse pass accumulates into them): write `Duplicated::new(&x, &mut dx)`, not `&dx`",
    note = "a shadow has its primal's type, or, in cudarc device memory, another writable cudarc type: a `&CudaView<T>` or `&CudaSlice<T>` source takes `&mut CudaViewMut<T>` shadows, a `&CudaView<T>` or `&CudaViewMut<T>` source `&mut CudaSlice<T>` shadows",
    note = "where the primitive takes a slice (`&[T]`), a `Vec`, array or `Box<[T]>` is given as one: `Duplicated::new(&x[..], &mut dx[..])`, `Const(&x[..])`"
)]
pub trait SrcArg<X: ?Sized>: Activity + sealed::OfRefs<X> {
    /// The buffer type of the shadows: `X`, or, for a source in cudarc device memory, the
    /// writable cudarc buffer the caller gave for its shadows. For `Const`, which has none, a
    /// stand-in that is never handed out.
    type Shadow: ?Sized;
    /// The primal buffer.
    fn primal(&self) -> &X;
    /// Shadow `k`, if `k < WIDTH`.
    fn lane(&self, k: usize) -> Option<&Self::Shadow>;
    /// Shadow `k`, for writing, if `k < WIDTH`.
    fn lane_mut(&mut self, k: usize) -> Option<&mut Self::Shadow>;
    /// Shadow `k` as the primal's own type, so that a forward rule can copy the tangent with the
    /// primitive itself (same direction, same stream); `None` when the shadow is of another type
    /// (the runtime copies that tangent) or `k >= WIDTH`.
    #[doc(hidden)]
    fn lane_as_primal(&self, k: usize) -> Option<&X>;
}

impl<X: ?Sized> DstArg<X> for Const<&mut X> {
    fn primal(&self) -> &X {
        self.0
    }
    fn primal_mut(&mut self) -> &mut X {
        self.0
    }
    fn lane(&self, _: usize) -> Option<&X> {
        None
    }
    fn lane_mut(&mut self, _: usize) -> Option<&mut X> {
        None
    }
}

/// A `Const` source has no shadow: its `Shadow` is a stand-in that every rule body accepts
/// (writable device memory of the element) and that is never handed out.
impl<X: ShadowRead + ?Sized> SrcArg<X> for Const<&X> {
    type Shadow = CudaSlice<X::Elem>;
    fn primal(&self) -> &X {
        self.0
    }
    fn lane(&self, _: usize) -> Option<&Self::Shadow> {
        None
    }
    fn lane_mut(&mut self, _: usize) -> Option<&mut Self::Shadow> {
        None
    }
    fn lane_as_primal(&self, _: usize) -> Option<&X> {
        None
    }
}

macro_rules! duplicated_refs {
    ($t:ident) => {
        impl<X: ?Sized, const N: usize> DstArg<X> for $t<&mut X, &mut X, N> {
            fn primal(&self) -> &X {
                self.primal
            }
            fn primal_mut(&mut self) -> &mut X {
                self.primal
            }
            fn lane(&self, k: usize) -> Option<&X> {
                self.shadows.get(k).map(|s| &**s)
            }
            fn lane_mut(&mut self, k: usize) -> Option<&mut X> {
                self.shadows.get_mut(k).map(|s| &mut **s)
            }
        }
        impl<X: ?Sized, const N: usize> SrcArg<X> for $t<&X, &mut X, N> {
            type Shadow = X;
            fn primal(&self) -> &X {
                self.primal
            }
            fn lane(&self, k: usize) -> Option<&X> {
                self.shadows.get(k).map(|s| &**s)
            }
            fn lane_mut(&mut self, k: usize) -> Option<&mut X> {
                self.shadows.get_mut(k).map(|s| &mut **s)
            }
            fn lane_as_primal(&self, k: usize) -> Option<&X> {
                self.lane(k)
            }
        }
    };
}
duplicated_refs!(Duplicated);
duplicated_refs!(DuplicatedOnly);

/// Sources in cudarc device memory whose shadows are another writable cudarc type: a read-only
/// `CudaView` (cudarc's copies take one for a source) with `CudaViewMut` or `CudaSlice` shadows,
/// and a whole buffer and a view of one the other way round. The forward rule cannot hand such a
/// shadow to the primitive (which takes `&X`), so the runtime copies those tangents.
macro_rules! other_shadow {
    ($([$($g:tt)*] $x:ty => $s:ty;)*) => {$(
        other_shadow!(@one Duplicated [$($g)*] $x => $s);
        other_shadow!(@one DuplicatedOnly [$($g)*] $x => $s);
    )*};
    (@one $t:ident [$($g:tt)*] $x:ty => $s:ty) => {
        impl<$($g)*, const N: usize> sealed::OfRefs<$x> for $t<&$x, &mut $s, N> {}
        impl<$($g)*, const N: usize> SrcArg<$x> for $t<&$x, &mut $s, N> {
            type Shadow = $s;
            fn primal(&self) -> &$x {
                self.primal
            }
            fn lane(&self, k: usize) -> Option<&$s> {
                self.shadows.get(k).map(|s| &**s)
            }
            fn lane_mut(&mut self, k: usize) -> Option<&mut $s> {
                self.shadows.get_mut(k).map(|s| &mut **s)
            }
            fn lane_as_primal(&self, _: usize) -> Option<&$x> {
                None
            }
        }
    };
}
other_shadow! {
    ['a, 'b, T] CudaView<'a, T> => CudaViewMut<'b, T>;
    ['a, T] CudaView<'a, T> => CudaSlice<T>;
    ['b, T] CudaSlice<T> => CudaViewMut<'b, T>;
    ['a, T] CudaViewMut<'a, T> => CudaSlice<T>;
}
// A host stand-in for the pairs above, in this crate's unit tests only: the bodies' path for a
// shadow of another type than its primal runs without a GPU (`rules/tests.rs`).
#[cfg(test)]
other_shadow! {
    [T] Vec<T> => [T];
}
