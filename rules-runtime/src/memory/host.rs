//! Pageable host memory: `[T]`, `[T; N]`, `Vec<T>`.
//!
//! The kind says "no device work touches this memory while the runtime uses it from the host".
//! A slice of page-locked or managed memory (e.g. `pinned.as_mut_slice()`) also arrives here as a
//! `[T]`; the operations never rely on pageable semantics for correctness (they wait for their own
//! copies to finish before writing a host slice; see `crate::ops`).

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory, ShadowRead};
use crate::element::Differentiable;
use crate::error::Result;
use cudarc::driver::CudaStream;

// SAFETY: a slice's length and address are its own; no device address is handed out.
unsafe impl<T: Differentiable> ShadowRead for [T] {
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
    fn host(&self) -> Result<Option<&[T]>> {
        Ok(Some(self))
    }
    fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
}

// SAFETY: as above.
unsafe impl<T: Differentiable> ShadowMemory for [T] {
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        Ok(Some(self))
    }
    fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
}

macro_rules! deref_to_slice {
    ($(impl[$($g:tt)*] $t:ty;)*) => {$(
        // SAFETY: forwards to the slice the container derefs to.
        unsafe impl<$($g)*> ShadowRead for $t {
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
            fn host(&self) -> Result<Option<&[T]>> {
                Ok(Some(&self[..]))
            }
            fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
                None
            }
        }
        // SAFETY: as above.
        unsafe impl<$($g)*> ShadowMemory for $t {
            fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
                Ok(Some(&mut self[..]))
            }
            fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
                None
            }
        }
    )*};
}

deref_to_slice! {
    impl[T: Differentiable] Vec<T>;
    impl[T: Differentiable, const N: usize] [T; N];
}
