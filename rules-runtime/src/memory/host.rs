//! Pageable host memory: `[T]`, `[T; N]`, `Vec<T>`.

use super::{Access, AccessMut, MemoryKind, Region, ShadowMemory};
use crate::element::Differentiable;

impl<T: Differentiable> ShadowMemory for [T] {
    type Elem = T;
    fn kind(&self) -> MemoryKind {
        MemoryKind::Host
    }
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn region(&self) -> Region {
        Region::of::<T>(self.as_ptr() as u64, <[T]>::len(self))
    }
    fn access(&self) -> Access<'_, T> {
        Access::Host(self)
    }
    fn access_mut(&mut self) -> AccessMut<'_, T> {
        AccessMut::Host(self)
    }
}

macro_rules! deref_to_slice {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        impl<$($g)*> ShadowMemory for $t {
            type Elem = T;
            fn kind(&self) -> MemoryKind {
                MemoryKind::Host
            }
            fn len(&self) -> usize {
                self[..].len()
            }
            fn region(&self) -> Region {
                self[..].region()
            }
            fn access(&self) -> Access<'_, T> {
                Access::Host(&self[..])
            }
            fn access_mut(&mut self) -> AccessMut<'_, T> {
                AccessMut::Host(&mut self[..])
            }
        }
    )*};
}

deref_to_slice! {
    impl[T: Differentiable] Vec<T>;
    impl[T: Differentiable, const N: usize] [T; N];
}
