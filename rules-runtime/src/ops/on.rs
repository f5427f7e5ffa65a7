//! Where shadow work is ordered: [`On`] names the copy's stream (or the host), [`AsStream`] what
//! can name a stream.

use cudarc::driver::CudaStream;
use std::sync::Arc;

/// Where the shadow work is ordered: on the host, or on the CUDA stream of the copy being
/// differentiated. Nothing in the runtime silently picks another stream.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum On<'a> {
    /// No stream named: host memory is handled by host code before the call returns; device
    /// memory of a cudarc buffer is handled on the buffer's own stream; a raw device pointer is
    /// an error ([`crate::Error::NoStream`]).
    Host,
    /// Work ordered on this stream (the primal copy's stream). Host memory is touched by host
    /// code after the work queued on the stream so far has finished.
    Stream(&'a CudaStream),
}

impl<'a> On<'a> {
    /// Orders work on `stream` (a `CudaStream` or `Arc<CudaStream>`).
    pub fn stream<S: AsStream + ?Sized>(stream: &'a S) -> Self {
        On::Stream(stream.as_stream())
    }
}

/// Anything that names a CUDA stream: `CudaStream`, `Arc<CudaStream>`, and references to them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a CUDA stream",
    label = "the rule orders its shadow work on this parameter (marked `#[stream]`, or the one whose type the macro cannot read): it must be a `CudaStream` or `Arc<CudaStream>`, a reference to one, or implement `AsStream`",
    note = "for a type of your own that holds a stream, implement `rules_runtime::ops::AsStream` for it; a parameter that is not the stream takes its role (`#[len]`, `#[dst_offset]`, ...), or `#[inert]` if it changes neither which elements the primitive writes nor their values"
)]
pub trait AsStream {
    /// The stream.
    fn as_stream(&self) -> &CudaStream;
}
impl AsStream for CudaStream {
    fn as_stream(&self) -> &CudaStream {
        self
    }
}
impl AsStream for Arc<CudaStream> {
    fn as_stream(&self) -> &CudaStream {
        self
    }
}
impl<S: AsStream + ?Sized> AsStream for &S {
    fn as_stream(&self) -> &CudaStream {
        (**self).as_stream()
    }
}
