//! The CUDA driver, reached safely: cudarc panics when libcuda is missing, so every entry point of
//! this crate that touches CUDA asks [`driver_available`] first and returns [`Error::NoDriver`].

use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use std::sync::{Arc, OnceLock};

/// Whether the CUDA driver library can be loaded (checked once, without panicking).
pub fn driver_available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the library by name; nothing from it is called.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
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
/// when there is no such device.
pub fn context(ordinal: usize) -> Result<Arc<CudaContext>> {
    require_driver()?;
    let count = CudaContext::device_count().map_err(driver("cuDeviceGetCount"))?;
    if ordinal >= count.max(0) as usize {
        return Err(Error::NoDevice {
            ordinal,
            count: count.max(0) as usize,
        });
    }
    CudaContext::new(ordinal).map_err(driver("cuCtxCreate"))
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
        message: e.to_string(),
    }
}
