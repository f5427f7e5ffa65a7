#[diagnostic::on_unimplemented(
    message = "`{Self}` is not one of the runtime's activities",
    label = "activities are sealed: wrap the argument in `Const`, `Duplicated`, `DuplicatedOnly`, `Active` or `Dual`",
    note = "the runtime plans the shadow work on what an activity answers and then writes through it, so only its own activity types are accepted"
)]
pub trait Sealed {}
impl<P> Sealed for super::Const<P> {}
impl<P, S, const N: usize> Sealed for super::Duplicated<P, S, N> {}
impl<P, S, const N: usize> Sealed for super::DuplicatedOnly<P, S, N> {}
impl<T> Sealed for super::Active<T> {}
impl<T, const N: usize> Sealed for super::Dual<T, N> {}

// The same for each buffer type an activity is implemented at: a crate's own buffer type as
// the parameter cannot make another crate's `Duplicated` a `DstArg` of it.
use super::{Active, Const, Dual, Duplicated, DuplicatedOnly};
/// Sealing of [`super::DstArg`] and [`super::SrcArg`] at `X`.
pub trait OfRefs<X: ?Sized> {}
impl<X: ?Sized> OfRefs<X> for Const<&mut X> {}
impl<X: ?Sized> OfRefs<X> for Const<&X> {}
impl<X: ?Sized, const N: usize> OfRefs<X> for Duplicated<&mut X, &mut X, N> {}
impl<X: ?Sized, const N: usize> OfRefs<X> for Duplicated<&X, &mut X, N> {}
impl<X: ?Sized, const N: usize> OfRefs<X> for DuplicatedOnly<&mut X, &mut X, N> {}
impl<X: ?Sized, const N: usize> OfRefs<X> for DuplicatedOnly<&X, &mut X, N> {}
// And the sources whose shadows are another cudarc type: `other_shadow!`, below.
/// Sealing of [`super::DstPtr`] and [`super::SrcPtr`] at `T`.
pub trait OfPtrs<T> {}
impl<T> OfPtrs<T> for Const<*mut T> {}
impl<T> OfPtrs<T> for Const<*const T> {}
impl<T, const N: usize> OfPtrs<T> for Duplicated<*mut T, *mut T, N> {}
impl<T, const N: usize> OfPtrs<T> for Duplicated<*const T, *mut T, N> {}
impl<T, const N: usize> OfPtrs<T> for DuplicatedOnly<*mut T, *mut T, N> {}
impl<T, const N: usize> OfPtrs<T> for DuplicatedOnly<*const T, *mut T, N> {}
/// Sealing of [`super::ForwardValue`] and [`super::ReverseValue`] at `T`.
pub trait OfValues<T> {}
impl<T> OfValues<T> for Const<T> {}
impl<T, const N: usize> OfValues<T> for Dual<T, N> {}
impl<T> OfValues<T> for Active<T> {}
