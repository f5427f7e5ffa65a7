//! The CUDA driver's errors, which must format where the driver is missing: the runtime's own
//! calls' ([`Error::Driver`]), a primal's ([`PrimalDriverError`]), and `?` on a cudarc call.

use super::Error;
use crate::driver::library::driver_available;
use cudarc::driver::DriverError;
use std::fmt;

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

/// A CUDA driver error returned by a user's primal (cudarc's [`DriverError`]), as
/// [`Error::Primal`] holds it. It names the code, e.g. `CUDA_ERROR_INVALID_VALUE`, and adds the
/// driver's description only when the driver is loaded: cudarc's own `Display` and `Debug` ask
/// the driver for it (`cuGetErrorString`) and panic where libcuda is missing. Its
/// [`source`](std::error::Error::source) is `None` for the same reason: the cudarc error is
/// [`PrimalDriverError::error`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PrimalDriverError(pub(super) DriverError);

impl PrimalDriverError {
    /// The driver's result code.
    pub fn code(&self) -> cudarc::driver::sys::CUresult {
        self.0.0
    }

    /// cudarc's error (whose `Display` and `Debug` panic without the driver).
    pub fn error(&self) -> DriverError {
        self.0
    }
}

impl fmt::Display for PrimalDriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CUDA driver error {:?}", self.code())?;
        if !driver_available() {
            return f
                .write_str(" (the CUDA driver is not loaded, so it cannot describe this code)");
        }
        match self.0.error_string() {
            Ok(text) => write!(f, ": {}", text.to_string_lossy()),
            Err(_) => Ok(()),
        }
    }
}

impl fmt::Debug for PrimalDriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The code alone: it needs no driver to be named.
        f.debug_tuple("PrimalDriverError")
            .field(&self.code())
            .finish()
    }
}

impl std::error::Error for PrimalDriverError {}

/// `?` on a cudarc call in a function that returns [`Result`]: [`Error::Driver`], the driver's
/// text only where the driver is loaded (cudarc's `Display` asks it, and panics without it).
impl From<DriverError> for Error {
    fn from(e: DriverError) -> Self {
        driver("a cudarc call")(e)
    }
}

/// The cudarc [`DriverError`] that `e` is, by value or boxed.
pub(super) fn driver_error_of(e: &(dyn std::error::Error + 'static)) -> Option<DriverError> {
    e.downcast_ref::<DriverError>()
        .or_else(|| e.downcast_ref::<Box<DriverError>>().map(|b| &**b))
        .copied()
}

/// Whether a cudarc [`DriverError`] is in the chain of `e`'s sources.
pub(super) fn driver_error_below(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut link = e.source();
    while let Some(l) = link {
        if driver_error_of(l).is_some() {
            return true;
        }
        link = l.source();
    }
    false
}
