//! Whether a CUDA library can be loaded, asked without loading it through cudarc (which panics
//! where it is missing). Below the errors: they ask it before they format a driver's code.

use std::sync::OnceLock;

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
