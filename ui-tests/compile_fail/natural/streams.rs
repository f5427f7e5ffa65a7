#![allow(unused_variables)]
// Streams the macro cannot read from the tokens: a parameter whose type it cannot read is the
// stream, and the compiler checks that it is one; two such, a stream taken by value, or another
// unread type beside a marked stream are refused, asking for `#[stream]` and `#[inert]`.
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::derivative_rule;
use std::sync::Arc;

pub type Stream = Arc<CudaStream>;
pub type Offset = usize;

/// Holds a stream, but does not say so (no `AsStream`).
pub struct Ctx {
    pub stream: Arc<CudaStream>,
}

#[derivative_rule(copy)]
pub fn two_unread(
    a: &Stream,
    ctx: &Ctx,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    a.memcpy_dtod(src, dst)
}

#[derivative_rule(copy)]
pub fn beside_marked(
    #[stream] s: &Arc<CudaStream>,
    ctx: &Ctx,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    s.memcpy_dtod(src, dst)
}

#[derivative_rule(copy)]
pub fn by_value(
    #[stream] s: Stream,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    s.memcpy_dtod(src, dst)
}

// Read as the stream; `Ctx` is not one: the compiler says so at its type.
#[derivative_rule(copy)]
pub fn through_ctx(
    ctx: &Ctx,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    ctx.stream.memcpy_dtod(src, dst)
}

// An integer behind an alias is read as the stream too, and refused by the compiler, whose
// note names the roles and `#[inert]`.
#[derivative_rule(copy)]
pub fn offset_alias(#[dst] dst: &mut [f32], #[src] src: &[f32], at: &Offset) {
    dst[*at..].copy_from_slice(&src[*at..]);
}

fn main() {}
