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

use crate::memory::ShadowRead;
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};

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
mod sealed;

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

/// An activity-annotated destination pointer `*mut T` of a pointer-shaped copy rule.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an activity for a destination pointer `*mut {T}`",
    label = "expected `Const(ptr)`, `Duplicated::new(ptr, shadow_ptr)` or `DuplicatedOnly::new(ptr, shadow_ptr)` with `*mut {T}` pointers"
)]
pub trait DstPtr<T>: Activity + sealed::OfPtrs<T> {
    /// The primal pointer.
    fn primal(&self) -> *mut T;
    /// Shadow pointer `k`, if `k < WIDTH`.
    fn lane(&self, k: usize) -> Option<*mut T>;
}

/// An activity-annotated source pointer `*const T` of a pointer-shaped copy rule.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an activity for a source pointer `*const {T}`",
    label = "expected `Const(ptr)`, `Duplicated::new(ptr, shadow_ptr)` or `DuplicatedOnly::new(ptr, shadow_ptr)`, the primal `*const {T}` and shadows `*mut {T}`"
)]
pub trait SrcPtr<T>: Activity + sealed::OfPtrs<T> {
    /// The primal pointer.
    fn primal(&self) -> *const T;
    /// Shadow pointer `k`, if `k < WIDTH`.
    fn lane(&self, k: usize) -> Option<*mut T>;
}

impl<T> DstPtr<T> for Const<*mut T> {
    fn primal(&self) -> *mut T {
        self.0
    }
    fn lane(&self, _: usize) -> Option<*mut T> {
        None
    }
}
impl<T> SrcPtr<T> for Const<*const T> {
    fn primal(&self) -> *const T {
        self.0
    }
    fn lane(&self, _: usize) -> Option<*mut T> {
        None
    }
}

macro_rules! duplicated_ptrs {
    ($t:ident) => {
        impl<T, const N: usize> DstPtr<T> for $t<*mut T, *mut T, N> {
            fn primal(&self) -> *mut T {
                self.primal
            }
            fn lane(&self, k: usize) -> Option<*mut T> {
                self.shadows.get(k).copied()
            }
        }
        impl<T, const N: usize> SrcPtr<T> for $t<*const T, *mut T, N> {
            fn primal(&self) -> *const T {
                self.primal
            }
            fn lane(&self, k: usize) -> Option<*mut T> {
                self.shadows.get(k).copied()
            }
        }
    };
}
duplicated_ptrs!(Duplicated);
duplicated_ptrs!(DuplicatedOnly);

/// `Active` has no shadow: it matches any width (its derivatives come back one per lane of the
/// destination).
impl<T> Activity for Active<T> {
    type Width = AnyWidth;
    const WIDTH: usize = 0;
    const PRIMAL_NEEDED: bool = true;
}
impl<T, const N: usize> Activity for Dual<T, N> {
    type Width = Lanes<N>;
    const WIDTH: usize = N;
    const PRIMAL_NEEDED: bool = true;
}

/// A value taken by value (a `fill`'s `#[value]`) in a forward rule: its tangent per lane.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a forward-mode activity for a value of type `{T}`",
    label = "expected `Const(v)` or `Dual::new(v, dv)` (`Dual::batch(v, [dv1, ..])` for a batch)",
    note = "`Active(v)` is for reverse mode (the augmented primal and the reverse rule)"
)]
pub trait ForwardValue<T>: Activity + sealed::OfValues<T> {
    /// The value.
    fn value(&self) -> T;
    /// Tangent `k` (`None` for `Const`: the tangent is zero).
    fn tangent(&self, k: usize) -> Option<T>;
}
impl<T: Copy> ForwardValue<T> for Const<T> {
    fn value(&self) -> T {
        self.0
    }
    fn tangent(&self, _: usize) -> Option<T> {
        None
    }
}
impl<T: Copy, const N: usize> ForwardValue<T> for Dual<T, N> {
    fn value(&self) -> T {
        self.primal
    }
    fn tangent(&self, k: usize) -> Option<T> {
        self.tangents.get(k).copied()
    }
}

/// A value taken by value (a `fill`'s `#[value]`) in an augmented primal and its reverse: whether
/// its derivative is wanted, and in what shape the reverse returns it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a reverse-mode activity for a value of type `{T}`",
    label = "expected `Const(v)` or `Active(v)`",
    note = "`Dual` is for forward mode; in reverse mode the value's derivative is returned by the reverse rule"
)]
pub trait ReverseValue<T>: sealed::Sealed + sealed::OfValues<T> {
    /// Whether the derivative is wanted.
    const ACTIVE: bool;
    /// What the reverse rule returns for a destination of batch width `W`: `()` for `Const`, one
    /// derivative per lane (`[T; N]`) for `Active`.
    type Gradient<W: LaneArray>;
    /// The value.
    fn value(&self) -> T;
    /// The gradient whose lane `k` is `f(k)` (not called for `Const`).
    fn gradient<W: LaneArray>(f: impl FnMut(usize) -> T) -> Self::Gradient<W>;
}
impl<T: Copy> ReverseValue<T> for Const<T> {
    const ACTIVE: bool = false;
    type Gradient<W: LaneArray> = ();
    fn value(&self) -> T {
        self.0
    }
    fn gradient<W: LaneArray>(_: impl FnMut(usize) -> T) {}
}
impl<T: Copy> ReverseValue<T> for Active<T> {
    const ACTIVE: bool = true;
    type Gradient<W: LaneArray> = W::Of<T>;
    fn value(&self) -> T {
        self.0
    }
    fn gradient<W: LaneArray>(f: impl FnMut(usize) -> T) -> W::Of<T> {
        W::from_fn(f)
    }
}
