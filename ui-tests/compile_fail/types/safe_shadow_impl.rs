#![forbid(unsafe_code)]
// The runtime launches kernels over what these traits answer (lengths, addresses), so a crate
// without `unsafe` must not be able to implement them.

use rules_runtime::cudarc::driver::CudaStream;
use rules_runtime::memory::{DeviceAddr, Region};
use rules_runtime::{MemoryKind, ShadowMemory, ShadowRead};

struct Lying(Vec<f32>);

impl ShadowRead for Lying {
    type Elem = f32;
    fn kind(&self) -> MemoryKind {
        MemoryKind::Host
    }
    fn len(&self) -> usize {
        self.0.len() * 1000
    }
    fn region(&self) -> Region {
        Region::of::<f32>(self.0.as_ptr() as u64, self.0.len())
    }
    fn host(&self) -> rules_runtime::Result<Option<&[f32]>> {
        Ok(Some(&self.0))
    }
    fn device<'a>(&'a self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
}

impl ShadowMemory for Lying {
    fn host_mut(&mut self) -> rules_runtime::Result<Option<&mut [f32]>> {
        Ok(Some(&mut self.0))
    }
    fn device_mut<'a>(&'a mut self, _: &'a CudaStream) -> Option<DeviceAddr<'a>> {
        None
    }
}

fn main() {}
