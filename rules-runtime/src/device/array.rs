//! A CUDA array's driver copies: its boxes as ends of a box copy or as surfaces for the kernels
//! ([`Place::at`], [`Place::surface`]), and the whole array to and from host memory.

use super::region::{At, SurfaceBox, copy_box};
use crate::driver::driver;
use crate::error::{Error, Result};
use crate::memory::ShadowRead;
use crate::memory::array::{ArrayElement, ArrayRef, CudaArray, Place};
use cudarc::driver::CudaStream;

impl<T: ArrayElement> CudaArray<T> {
    /// Copies `data` (the whole array, x fastest) in from host memory, ordered on `stream`;
    /// `data` is read before the call returns.
    pub fn copy_from_host(&mut self, stream: &CudaStream, data: &[T]) -> Result<()> {
        crate::error::check_len("the host data for a CUDA array", self.len(), data.len())?;
        self.array_ref()
            .host_copy(stream, data.as_ptr() as u64, true)?;
        stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize (array upload)"))
    }

    /// The whole array, copied out to host memory once the work queued on `stream` is done.
    pub fn to_host(&self, stream: &CudaStream) -> Result<Vec<T>> {
        let mut v = vec![T::zero(); self.len()];
        self.array_ref()
            .host_copy(stream, v.as_mut_ptr() as u64, false)?;
        stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize (array download)"))?;
        Ok(v)
    }
}

impl Place<'_> {
    /// This box as one side of a box copy.
    pub(crate) fn at(&self) -> (At, u64, u64) {
        let (x, y, z) = self.origin;
        (
            At::Array {
                handle: self.handle,
                x,
                y,
                z,
            },
            0,
            0,
        )
    }

    /// The box's surface side, if the array has a surface and the box's far corner fits the
    /// kernels' 32-bit coordinates.
    pub(crate) fn surface(&self) -> Option<SurfaceBox> {
        let ((x, y, z), (w, h, d)) = (self.origin, self.shape);
        let fits = |v: Option<usize>| v.is_some_and(|v| i32::try_from(v).is_ok());
        let fit = fits(x.checked_add(w).and_then(|e| e.checked_mul(self.size)))
            && fits(y.checked_add(h))
            && fits(z.checked_add(d));
        Some(SurfaceBox {
            surface: self.surface.filter(|_| fit)?,
            dims: self.dims,
            x,
            y,
            z,
        })
    }
}

impl ArrayRef<'_> {
    /// The whole array copied from (`to_array`) or to host memory `host` (the whole array, x
    /// fastest), on `stream`, ordered after the array's last work; the caller waits for the
    /// stream before it uses `host` again.
    fn host_copy(&self, stream: &CudaStream, host: u64, to_array: bool) -> Result<()> {
        // The caller waits for the stream, which a graph capture cannot record.
        if crate::driver::capturing(stream)? {
            return Err(Error::Capturing {
                op: "a CUDA array's host copy",
            });
        }
        if self.ctx.cu_ctx() != stream.context().cu_ctx() {
            return Err(Error::ContextMismatch {
                what: "a CUDA array".into(),
                expected: stream.context().ordinal(),
                found: self.ctx.ordinal(),
            });
        }
        self.wait(stream)?;
        let (w, h, d) = self.extent;
        let whole = (
            At::Array {
                handle: self.handle,
                x: 0,
                y: 0,
                z: 0,
            },
            0,
            0,
        );
        let linear = (At::Host(host), w as u64, (w * h) as u64);
        let (dst, src) = if to_array {
            (whole, linear)
        } else {
            (linear, whole)
        };
        // SAFETY: the caller's host memory holds the whole array (checked by the callers) and is
        // not used until the stream has been synchronised; the array is ours to copy.
        unsafe { copy_box(stream, self.size, dst, src, (w as u64, h as u64, d as u64))? };
        self.record(stream)
    }
}
