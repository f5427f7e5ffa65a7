//! Activity annotations: how each argument of a generated rule takes part in differentiation.
//!
//! The vocabulary follows `std::autodiff`: an argument is [`Const`] (no derivative), [`Duplicated`]
//! (the primal plus `N` shadows, batch width `N`), or [`DuplicatedOnly`] (the same, but the primal
//! result is not needed, so the primal copy may be skipped). The caller's choice of types picks the
//! rule's behaviour at compile time: one generated function serves every combination.
//!
//! A scalar taken by value (the value of a `fill`) has no shadow to write into, so it follows
//! `std::autodiff`'s words for scalars: in forward mode [`Const`] or [`Dual`] (the value and its
//! `N` tangents); in reverse mode [`Const`] or [`Active`] (the value whose derivative the reverse
//! rule returns, one per lane of the destination: a `[T; N]`).
//!
//! A source's primal is only read, so it may be read-only memory: `Duplicated::new(&x_view,
//! &mut dx_view)` with `x_view: CudaView` (what cudarc's copies take for a source) and `dx_view:
//! CudaViewMut` or `dx: CudaSlice`, since a shadow is written. [`SrcArg::Shadow`] names the
//! shadows' type.
//!
//! ```
//! use rules_runtime::{Const, Duplicated};
//! let x = [1.0f32, 2.0];
//! let mut dx = [0.0f32; 2];
//! let _src = Duplicated::new(&x[..], &mut dx[..]); // primal + one shadow (width 1)
//! let mut y = [0.0f32; 2];
//! let _dst = Const(&mut y[..]); // no derivative wanted for y
//! ```

mod buffers;
mod pointers;
mod values;

pub use buffers::{DstArg, SrcArg};
pub use pointers::{DstPtr, SrcPtr};
pub use values::{ForwardValue, ReverseValue};

/// An argument with no derivative: its shadow is neither read nor written.
#[derive(Debug)]
pub struct Const<P>(pub P);

/// An argument with `N` shadows (batch width `N`, default 1); the primal copy runs.
#[derive(Debug)]
pub struct Duplicated<P, S, const N: usize = 1> {
    /// The primal argument.
    pub primal: P,
    /// One shadow per lane.
    pub shadows: [S; N],
}

/// Like [`Duplicated`], but the caller does not need the primal result, so the primal copy into
/// this destination may be skipped (Enzyme's `DuplicatedNoNeed`). On a source it acts as `Duplicated`.
#[derive(Debug)]
pub struct DuplicatedOnly<P, S, const N: usize = 1> {
    /// The primal argument (still needed to know the buffer's shape).
    pub primal: P,
    /// One shadow per lane.
    pub shadows: [S; N],
}

macro_rules! constructors {
    ($t:ident) => {
        impl<P, S> $t<P, S, 1> {
            /// A primal with one shadow (width 1).
            pub fn new(primal: P, shadow: S) -> Self {
                $t {
                    primal,
                    shadows: [shadow],
                }
            }
        }
        impl<P, S, const N: usize> $t<P, S, N> {
            /// A primal with `N` shadows (batch width `N`).
            pub fn batch(primal: P, shadows: [S; N]) -> Self {
                $t { primal, shadows }
            }
        }
    };
}
constructors!(Duplicated);
constructors!(DuplicatedOnly);

/// A scalar whose derivative the reverse rule returns (`std::autodiff`'s `Active`): the value of
/// a `fill` in reverse mode. The derivative comes back from the reverse rule as one value per lane
/// of the destination, `[T; N]` (`[T; 0]` when the destination is `Const`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Active<T>(pub T);

/// A scalar with `N` tangents (forward mode, batch width `N`, default 1): `std::autodiff`'s `Dual`
/// for a value taken by value, such as the value of a `fill`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dual<T, const N: usize = 1> {
    /// The value.
    pub primal: T,
    /// One tangent per lane.
    pub tangents: [T; N],
}

impl<T> Dual<T, 1> {
    /// A value with one tangent (width 1).
    pub fn new(primal: T, tangent: T) -> Self {
        Dual {
            primal,
            tangents: [tangent],
        }
    }
}

impl<T, const N: usize> Dual<T, N> {
    /// A value with `N` tangents (batch width `N`).
    pub fn batch(primal: T, tangents: [T; N]) -> Self {
        Dual { primal, tangents }
    }
}

/// The batch width of a `Const` argument: it matches any width.
#[derive(Debug)]
pub struct AnyWidth;

/// The batch width `N` of a `Duplicated` or `DuplicatedOnly` argument.
#[derive(Debug)]
pub struct Lanes<const N: usize>;

/// One value per lane of a batch width: `[T; N]` for [`Lanes<N>`], `[T; 0]` for [`AnyWidth`] (a
/// `Const` argument has no lane). The shape of the derivatives a reverse rule returns.
pub trait LaneArray {
    /// `[T; N]`.
    type Of<T>;
    /// The array whose lane `k` is `f(k)`.
    fn from_fn<T>(f: impl FnMut(usize) -> T) -> Self::Of<T>;
}
impl LaneArray for AnyWidth {
    type Of<T> = [T; 0];
    fn from_fn<T>(f: impl FnMut(usize) -> T) -> [T; 0] {
        core::array::from_fn(f)
    }
}
impl<const N: usize> LaneArray for Lanes<N> {
    type Of<T> = [T; N];
    fn from_fn<T>(f: impl FnMut(usize) -> T) -> [T; N] {
        core::array::from_fn(f)
    }
}

/// Proof, at compile time, that `dst` and `src` have the same batch width.
#[diagnostic::on_unimplemented(
    message = "the batch widths of `dst` and `src` differ: `{Self}` for `dst` against `{Other}` for `src`",
    label = "`dst` and `src` must have the same number of shadows",
    note = "give both arguments the same width N (e.g. `Duplicated::batch(x, [dx1, dx2, dx3])` on both), or make one of them `Const`"
)]
pub trait SameWidth<Other> {}
impl<const N: usize> SameWidth<Lanes<N>> for Lanes<N> {}
impl<const N: usize> SameWidth<AnyWidth> for Lanes<N> {}
impl<const N: usize> SameWidth<Lanes<N>> for AnyWidth {}
impl SameWidth<AnyWidth> for AnyWidth {}

/// Sealing of the activity traits: the runtime plans a call on what [`DstArg::lane`] and
/// [`SrcArg::lane`] answer and then writes through [`DstArg::lane_mut`], so the only
/// implementations are this module's, whose answers are the wrapped references themselves.
/// Users never need to implement an activity: they wrap their buffers in the types above.
mod sealed {
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
}

/// What every activity says about itself. Sealed: implemented by [`Const`], [`Duplicated`],
/// [`DuplicatedOnly`], [`Active`] and [`Dual`] only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an activity: a generated rule takes its buffers wrapped in `Const`, `Duplicated` or `DuplicatedOnly`",
    label = "wrap this argument, e.g. `Const(&x)` or `Duplicated::new(&x, &mut dx)`"
)]
pub trait Activity: sealed::Sealed {
    /// [`AnyWidth`] or [`Lanes<N>`].
    type Width: LaneArray;
    /// Number of shadows (0 for [`Const`]).
    const WIDTH: usize;
    /// Whether the primal result is needed (false only for [`DuplicatedOnly`]).
    const PRIMAL_NEEDED: bool;
    /// Whether there is any shadow.
    const ACTIVE: bool = Self::WIDTH > 0;
}

impl<P> Activity for Const<P> {
    type Width = AnyWidth;
    const WIDTH: usize = 0;
    const PRIMAL_NEEDED: bool = true;
}
impl<P, S, const N: usize> Activity for Duplicated<P, S, N> {
    type Width = Lanes<N>;
    const WIDTH: usize = N;
    const PRIMAL_NEEDED: bool = true;
}
impl<P, S, const N: usize> Activity for DuplicatedOnly<P, S, N> {
    type Width = Lanes<N>;
    const WIDTH: usize = N;
    const PRIMAL_NEEDED: bool = false;
}
