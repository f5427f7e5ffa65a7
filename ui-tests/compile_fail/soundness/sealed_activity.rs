// Issue 21 item 1: the runtime plans a copy on what an activity's `lane` answers and writes
// through what `lane_mut` answers, so the activity traits are sealed: an implementation that
// answers a shorter buffer for one than for the other cannot be written. Nor can a collective
// buffer whose NCCL view is shorter than its length.
#![allow(dead_code)]

use rules_runtime::__private::{Activity, CollectiveSrc, DstArg, SrcArg};
use rules_runtime::Duplicated;
use rules_runtime::activity::Lanes;
use rules_runtime::cudarc::driver::{CudaSlice, CudaView};

/// A destination whose planned lane is long and whose written lane is short.
struct Lying<'a> {
    y: &'a mut [f32],
    long: &'a mut [f32],
    short: &'a mut [f32],
}

impl Activity for Lying<'_> {
    type Width = Lanes<1>;
    const WIDTH: usize = 1;
    const PRIMAL_NEEDED: bool = true;
}

impl DstArg<[f32]> for Lying<'_> {
    fn primal(&self) -> &[f32] {
        self.y
    }
    fn primal_mut(&mut self) -> &mut [f32] {
        self.y
    }
    fn lane(&self, _: usize) -> Option<&[f32]> {
        Some(self.long)
    }
    fn lane_mut(&mut self, _: usize) -> Option<&mut [f32]> {
        Some(self.short)
    }
}

struct LyingSource<'a>(&'a [f32]);

impl SrcArg<[f32]> for LyingSource<'_> {
    type Shadow = [f32];
    fn primal(&self) -> &[f32] {
        self.0
    }
    fn lane_as_primal(&self, _: usize) -> Option<&[f32]> {
        None
    }
    fn lane(&self, _: usize) -> Option<&[f32]> {
        None
    }
    fn lane_mut(&mut self, _: usize) -> Option<&mut [f32]> {
        None
    }
}

/// A buffer type of this crate as the parameter: the orphan rule would allow implementing the
/// activity trait for the runtime's own `Duplicated` at it; the sealing is per buffer type too.
struct MyBuf(Vec<f32>);

impl DstArg<MyBuf> for Duplicated<u8, u8, 1> {
    fn primal(&self) -> &MyBuf {
        unimplemented!()
    }
    fn primal_mut(&mut self) -> &mut MyBuf {
        unimplemented!()
    }
    fn lane(&self, _: usize) -> Option<&MyBuf> {
        None
    }
    fn lane_mut(&mut self, _: usize) -> Option<&mut MyBuf> {
        None
    }
}

/// A collective buffer whose view is not the whole of it.
struct Half(CudaSlice<f32>);

impl CollectiveSrc for Half {
    fn view(&self) -> CudaView<'_, f32> {
        self.0.slice(..1)
    }
}

fn main() {}
