//! The CUDA driver, reached safely: cudarc panics when libcuda is missing, so every entry point of
//! this crate that touches CUDA asks [`driver_available`] first and returns [`Error::NoDriver`].
//!
//! The ground floor of the runtime with [`crate::error`]: whether the driver is there
//! ([`library`]), the driver handle (contexts, streams, a capture's status), the one cache of
//! per-context resources ([`pool`]) and the host-side step timer ([`probe`]). Its public
//! functions are the crate's `cuda` module.

pub(crate) mod library;
pub(crate) mod pool;
pub(crate) mod probe;

pub(crate) use crate::error::driver;
pub use library::driver_available;
pub(crate) use library::library_present;

use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use std::sync::Arc;

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
    pool::kernels(ctx).map(drop)
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

/// Whether `s` is being captured into a CUDA graph.
pub(crate) fn capturing(s: &CudaStream) -> Result<bool> {
    let _p = probe::span("capturing (cuStreamIsCapturing)");
    let _current = pool::CurrentContext::save();
    let status = s.capture_status().map_err(driver("cuStreamIsCapturing"))?;
    Ok(status != cudarc::driver::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
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
