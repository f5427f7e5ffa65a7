//! Activities of a value taken by value (a `fill`'s `#[value]`): [`Const`], [`Dual`] in forward
//! mode and [`Active`] in reverse mode.

use super::{Active, Activity, AnyWidth, Const, Dual, LaneArray, Lanes, sealed};

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
