use rules_runtime::cudarc::driver::CudaStream;
use rules_runtime::derivative_rule;
use rules_runtime::memory::array::{ArrayElement, CudaArray};
use rules_runtime::memory::linear::Linear;
use std::sync::Arc;

// Array rules are bridged with handles: the array by an `AdArray`, the linear side by an `AdBuf`
// (a `RawShadow<T>`, or a type parameter bounded by `Linear`) or as a pageable slice.

// A generic array rule without its element types.
#[derivative_rule(copy, autodiff)]
fn upload<T: ArrayElement, L: Linear<Elem = T> + ?Sized>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[src] src: &L,
) -> rules_runtime::Result<()> {
    let _ = (stream, dst, src);
    Ok(())
}

// A linear side the bridge cannot make from a handle: a `Vec`.
#[derivative_rule(copy, autodiff)]
fn download(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut Vec<f32>,
    #[src] src: &CudaArray<f32>,
) -> rules_runtime::Result<()> {
    let _ = (stream, dst, src);
    Ok(())
}

// A type parameter that is neither the element nor the linear side.
#[derivative_rule(copy, autodiff(f32))]
fn tagged<T: ArrayElement, L: Linear<Elem = T> + ?Sized, Tag: Copy>(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<T>,
    #[src] src: &L,
    #[inert] tag: &Tag,
) -> rules_runtime::Result<()> {
    let _ = (stream, dst, src, tag);
    Ok(())
}

fn main() {}
