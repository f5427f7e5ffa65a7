// Streams as users hold them: behind an alias, in a newtype or a struct of their own that
// implements `AsStream`, or as `Self` of an associated function (`in_impl`). Each one is the
// stream the rule orders its shadow work on; parameters that choose nothing are `#[inert]`.
use rules_runtime::cudarc::driver::{CudaSlice, CudaStream, DriverError};
use rules_runtime::ops::AsStream;
use rules_runtime::prelude::*;
use std::sync::Arc;

pub type Stream = Arc<CudaStream>;

/// A device handle of the user's, which holds the stream its copies run on.
pub struct Device {
    stream: Arc<CudaStream>,
    copies: std::cell::Cell<usize>,
}

impl AsStream for Device {
    fn as_stream(&self) -> &CudaStream {
        &self.stream
    }
}

#[derivative_rule(copy)]
pub fn through_alias(
    stream: &Stream,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

#[derivative_rule(memset)]
pub fn clear_on(dev: &Device, #[dst] dst: &mut CudaSlice<f32>) -> Result<(), DriverError> {
    dev.copies.set(dev.copies.get() + 1);
    dev.stream.memset_zeros(dst)
}

#[derivative_rule(fill)]
pub fn fill_on<S: AsStream>(
    stream: &S,
    #[dst] dst: &mut [f32],
    #[value] v: f32,
    #[inert] chunk: usize,
) {
    let _ = stream.as_stream();
    for c in dst.chunks_mut(chunk.max(1)) {
        c.fill(v);
    }
}

impl Device {
    /// The method form of a copy: the receiver is an ordinary parameter, and holds the stream.
    #[derivative_rule(copy, in_impl)]
    pub fn upload(
        this: &Self,
        #[dst] dst: &mut CudaSlice<f32>,
        #[src] src: &[f32],
    ) -> Result<(), DriverError> {
        this.stream.memcpy_htod(src, dst)
    }

    /// A receiver that holds no stream is `#[inert]`; the stream is marked.
    #[derivative_rule(copy, in_impl)]
    pub fn download(
        #[inert] this: &Self,
        #[stream] stream: &Stream,
        #[dst] dst: &mut [f32],
        #[src] src: &CudaSlice<f32>,
    ) -> Result<(), DriverError> {
        this.copies.set(this.copies.get() + 1);
        stream.memcpy_dtoh(src, dst)
    }
}

/// Never called: the calls type-check, which is what this case is for.
pub fn calls(dev: &Device, s: &Stream, y: &mut CudaSlice<f32>, x: &CudaSlice<f32>, h: &mut [f32]) {
    let _ = through_alias_rule(s).forward(Const(&mut *y), Const(x));
    let _ = clear_on_rule(dev).forward(Const(&mut *y));
    let _ = fill_on_rule(s, 4).forward(Const(&mut *h), Const(1.0f32));
    let _ = Device::upload_rule(dev).forward(Const(&mut *y), Const(&h[..]));
    let _ = Device::download_rule(dev, s).forward(Const(h), Const(x));
}

fn main() {}
