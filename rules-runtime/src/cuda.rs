//! The CUDA driver, reached safely: cudarc panics when libcuda is missing, so every entry point of
//! this crate that touches CUDA asks [`driver_available`] first and returns [`Error::NoDriver`].

use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use std::sync::{Arc, OnceLock};

/// Whether the CUDA driver library can be loaded (checked once, without panicking).
pub fn driver_available() -> bool {
    // Miri cannot call into a foreign library: the host code it checks runs as without a driver.
    if cfg!(miri) {
        return false;
    }
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| library_present(&["libcuda.so", "libcuda.so.1", "nvcuda.dll"]))
}

/// Whether one of `names` can be opened as a shared library. Our own probe, not cudarc's
/// `is_culib_present`: that one exists only when cudarc loads the driver at run time, and cudarc
/// links it instead when another crate in the build (candle) asks for `dynamic-linking`. Every
/// name here is also one cudarc's loader tries, so a library found here is one cudarc finds.
pub(crate) fn library_present(names: &[&str]) -> bool {
    names.iter().any(|name| {
        // SAFETY: opening a library runs its initialisers; the CUDA and NCCL libraries' are the
        // ones cudarc would run when it loads them. Nothing from it is called here.
        unsafe { libloading::Library::new(*name) }.is_ok()
    })
}

/// `Ok` when the driver is there, [`Error::NoDriver`] otherwise.
pub fn require_driver() -> Result<()> {
    if driver_available() {
        Ok(())
    } else {
        Err(Error::NoDriver)
    }
}

/// The context of device `ordinal`: [`Error::NoDriver`] without a driver, [`Error::NoDevice`]
/// when there is no such device. The runtime's kernels are loaded into it here ([`prepare`]).
pub fn context(ordinal: usize) -> Result<Arc<CudaContext>> {
    let count = device_count()?;
    if ordinal >= count {
        return Err(Error::NoDevice { ordinal, count });
    }
    let ctx = CudaContext::new(ordinal).map_err(driver("cuCtxCreate"))?;
    prepare(&ctx)?;
    Ok(ctx)
}

/// Loads the runtime's kernels into `ctx` now, instead of at the first shadow operation on it.
///
/// Loading a module into a context waits for the work in flight on that context (the driver's
/// doing: measured on the H200, a first reverse called while its stream was held busy returned
/// only once the stream was released, and every later one at once). [`context`] and [`stream`]
/// do this for the contexts they make; a program that makes its contexts with cudarc directly
/// calls this once per context before it enqueues work it may have to wait on, so that no call
/// of a rule waits for earlier work. Calling it again costs a lock and a lookup.
pub fn prepare(ctx: &Arc<CudaContext>) -> Result<()> {
    require_driver()?;
    crate::device::pool::kernels(ctx).map(drop)
}

/// What [`reserve`] holds ready on a stream's context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reserved {
    /// Page-locked bytes pooled for staging operands below 8 MiB (two buffers).
    pub small_pinned_bytes: usize,
    /// Page-locked bytes pooled for the pipelines of operands from 8 MiB (0 below).
    pub pipeline_pinned_bytes: usize,
    /// Threads of the host's pool, started.
    pub host_threads: usize,
}

/// Pays up front, on `stream`'s context, what the first shadow operations there would otherwise
/// pay inside a call: the kernels' module load ([`prepare`]), the start of the host's threads, the
/// page-locked staging buffers that reverses through host memory lease from the runtime's pool,
/// and the first launch on `stream`. Call it once per context (or again with a larger `bytes`),
/// before the first rule call you time or that a deadline covers; every call after it finds what
/// it needs in the pool.
///
/// `bytes` is the largest shadow, in bytes, that a rule will stage through host memory (a reverse
/// between pageable host memory and device memory, a region rule on host memory). What is
/// pooled, allocated only if the pool does not hold it already:
/// - two page-locked buffers of `bytes` clamped to 16 B – 8 MiB (rounded up to a power of two),
///   for the staging of small operands;
/// - from `bytes` ≥ 8 MiB, one page-locked buffer of 64 MiB, the slots of the pipelines that move
///   large operands chunk by chunk.
///
/// So at most 80 MiB of page-locked host memory, held until the context is released (see
/// `docs/performance.md`, "the first call"). It then rehearses a small staged reverse on
/// `stream` with pooled buffers only (a memset, two device → host copies and two launches, on one
/// small pooled device buffer that stays pooled), and waits for nothing. Without it, the same
/// costs are paid by the first call that needs each (measured on the H200: a first reverse of a
/// 256 MiB pageable shadow took 3.4–5.7× its steady state).
///
/// # Errors
/// [`crate::Error::Capturing`] while `stream` is being captured into a CUDA graph (nothing is
/// allocated or enqueued, and the capture stays intact): reserve before capturing.
pub fn reserve(stream: &CudaStream, bytes: usize) -> Result<Reserved> {
    use crate::device::pipeline::{MIN_BYTES, PIPELINE_BYTES};
    use crate::device::pool::{self, Memory};
    require_driver()?;
    // Allocating page-locked memory and rehearsing on the stream would break a capture (global
    // mode refuses allocations) or record pooled work into the user's graph: refused first.
    if crate::ops::capturing(stream)? {
        return Err(crate::Error::Capturing {
            op: "cuda::reserve",
        });
    }
    let ctx = stream.context();
    prepare(ctx)?;
    rayon::broadcast(|_| ());
    // At least one element of the widest type (complex f64), which the rehearsal below stages.
    let small = bytes.clamp(16, MIN_BYTES);
    // A capture in global mode on another stream would refuse these allocations (and be
    // invalidated by them) in the thread's default mode.
    let (small_pinned_bytes, pipeline_pinned_bytes) = pool::with_relaxed_capture(|| {
        let small_bytes = pool::reserve(ctx, Memory::PinnedHost, small, 2)?;
        let pipeline_bytes = if bytes >= MIN_BYTES {
            pool::reserve(ctx, Memory::PinnedHost, PIPELINE_BYTES, 1)?
        } else {
            0
        };
        // The rehearsal's device buffer, which its first lease would allocate.
        let rehearsal = crate::device::kernels::rehearsal_bytes(small);
        pool::reserve(ctx, Memory::Device, rehearsal, 1)?;
        Ok((small_bytes, pipeline_bytes))
    })?;
    // The first launch, memset and device → host copy on a stream, and a pooled buffer's first
    // lease, cost more than the next ones: rehearsed here on pooled buffers.
    crate::device::kernels::rehearse(stream, small)?;
    Ok(Reserved {
        small_pinned_bytes,
        pipeline_pinned_bytes,
        host_threads: rayon::current_num_threads(),
    })
}

/// How many CUDA devices this process sees: [`Error::NoDriver`] without a driver; 0 when the
/// driver loads but finds no device (a container without a GPU, `CUDA_VISIBLE_DEVICES=""`).
pub fn device_count() -> Result<usize> {
    require_driver()?;
    match CudaContext::device_count() {
        Ok(c) => Ok(usize::try_from(c).unwrap_or(0)),
        Err(e) => no_device_is_zero(e),
    }
}

/// `cuInit` answers `CUDA_ERROR_NO_DEVICE` when the driver sees no device: that is a count of 0,
/// not a failure of the driver.
fn no_device_is_zero(e: DriverError) -> Result<usize> {
    match e.0 {
        cudarc::driver::sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => Ok(0),
        _ => Err(driver("cuDeviceGetCount")(e)),
    }
}

/// A new stream on device `ordinal`, with the same errors as [`context`].
pub fn stream(ordinal: usize) -> Result<Arc<CudaStream>> {
    context(ordinal)?
        .new_stream()
        .map_err(driver("cuStreamCreate"))
}

/// Maps a driver error of operation `op` into [`Error::Driver`].
pub(crate) fn driver(op: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| Error::Driver {
        op,
        // cudarc's message asks the driver for its text, which panics where the library is
        // missing: the code's name alone does not.
        message: if driver_available() {
            e.to_string()
        } else {
            format!("{:?}", e.0)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::cudaError_enum;

    #[test]
    fn no_device_from_the_driver_is_a_count_of_zero() {
        assert_eq!(
            no_device_is_zero(DriverError(cudaError_enum::CUDA_ERROR_NO_DEVICE)).unwrap(),
            0
        );
        let e = no_device_is_zero(DriverError(cudaError_enum::CUDA_ERROR_UNKNOWN)).unwrap_err();
        assert!(matches!(e, Error::Driver { .. }), "{e}");
    }

    #[test]
    fn without_a_driver_every_entry_point_says_so() {
        if driver_available() {
            eprintln!("skipped: this machine has a CUDA driver");
            return;
        }
        assert!(matches!(device_count(), Err(Error::NoDriver)));
        assert!(matches!(context(0), Err(Error::NoDriver)));
        assert!(matches!(stream(0), Err(Error::NoDriver)));
    }
}
