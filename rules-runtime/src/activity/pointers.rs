//! Activities of raw pointers (`*mut T`, `*const T`): what a destination and a source of a
//! pointer-shaped rule may be.

use super::{Activity, Const, Duplicated, DuplicatedOnly, sealed};

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
