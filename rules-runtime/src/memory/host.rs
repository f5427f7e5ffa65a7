//! Pageable host memory: `[T]`, `[T; N]`, `Vec<T>`.

use super::{DeviceAddr, MemoryKind, Region, ShadowMemory};
use crate::element::Differentiable;
use crate::error::Result;
use cudarc::driver::CudaStream;

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
    fn host(&self) -> Result<Option<&[T]>> {
        Ok(Some(self))
    }
    fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
        Ok(Some(self))
    }
    fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
    fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
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
            fn host(&self) -> Result<Option<&[T]>> {
                Ok(Some(&self[..]))
            }
            fn host_mut(&mut self) -> Result<Option<&mut [T]>> {
                Ok(Some(&mut self[..]))
            }
            fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
                None
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
