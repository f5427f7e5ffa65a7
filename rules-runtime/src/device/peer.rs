//! Peer access between devices, and the device a raw device pointer lives on: thin driver calls
//! (`cuDeviceCanAccessPeer`, `cuCtxEnablePeerAccess`, `cuPointerGetAttribute`).

use crate::driver::{driver, require_driver};
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, sys};
use std::sync::Arc;

/// Whether device `from` can map the memory of device `to` (`cuDeviceCanAccessPeer`).
pub fn can_access_peer(from: &CudaContext, to: &CudaContext) -> Result<bool> {
    require_driver()?;
    let mut can = 0i32;
    // SAFETY: plain query on two valid device handles.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, from.cu_device(), to.cu_device()) }
        .result()
        .map_err(driver("cuDeviceCanAccessPeer"))?;
    Ok(can != 0)
}

/// Lets kernels and copies of `from` access the memory of `to` directly
/// (`cuCtxEnablePeerAccess`), which makes peer copies between them faster. Enabling it twice
/// is fine. The copy rules do not need it: without it, their reverse is staged through peer
/// copies.
///
/// [`Error::NoPeerAccess`] when the devices cannot map each other's memory.
pub fn enable_peer_access(from: &Arc<CudaContext>, to: &Arc<CudaContext>) -> Result<()> {
    if same(from, to) {
        return Ok(());
    }
    if !can_access_peer(from, to)? {
        return Err(Error::NoPeerAccess {
            from: from.ordinal(),
            to: to.ordinal(),
        });
    }
    from.bind_to_thread().map_err(driver("cuCtxSetCurrent"))?;
    // SAFETY: `to` is a live context.
    match unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) } {
        sys::cudaError_enum::CUDA_SUCCESS
        | sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
        | sys::cudaError_enum::CUDA_ERROR_INVALID_DEVICE => Err(Error::NoPeerAccess {
            from: from.ordinal(),
            to: to.ordinal(),
        }),
        e => Err(driver("cuCtxEnablePeerAccess")(
            cudarc::driver::DriverError(e),
        )),
    }
}

fn same(a: &CudaContext, b: &CudaContext) -> bool {
    a.cu_ctx() == b.cu_ctx()
}

/// The ordinal of the device `addr` lives on, if the driver knows the address.
pub(crate) fn pointer_ordinal(addr: u64) -> Option<usize> {
    let mut ordinal = -1i32;
    // SAFETY: a query on an address; the driver answers an error for unknown addresses, and writes
    // one `int` on success.
    let known = unsafe {
        sys::cuPointerGetAttribute(
            (&raw mut ordinal).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            addr,
        )
    }
    .result()
    .is_ok();
    if known {
        usize::try_from(ordinal).ok()
    } else {
        None
    }
}
