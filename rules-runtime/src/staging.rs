//! Reusable staging buffers for pairs of pageable host memory and device memory: one device
//! buffer and one pinned host buffer per stream, grown when too small, never allocated per call.
//! Each is locked while its copies and kernel are enqueued, and reuse is ordered by its stream.

use crate::cuda::driver;
use crate::error::Result;
use cudarc::driver::{CudaStream, sys};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// A stream's staging memory.
pub(crate) struct Staging {
    dev: u64,
    dev_bytes: usize,
    host: *mut u8,
    host_bytes: usize,
}

// SAFETY: the raw buffers are only touched while the entry's mutex is held.
unsafe impl Send for Staging {}

type Entry = Arc<Mutex<Staging>>;

/// The staging entry of `stream`, locked.
pub(crate) fn lock(stream: &CudaStream) -> Result<StagingGuard> {
    static ENTRIES: Mutex<Option<HashMap<(usize, usize), Entry>>> = Mutex::new(None);
    let key = (
        stream.context().cu_ctx() as usize,
        stream.cu_stream() as usize,
    );
    let entry = {
        let mut map = ENTRIES.lock().unwrap_or_else(|p| p.into_inner());
        map.get_or_insert_with(HashMap::new)
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Mutex::new(Staging {
                    dev: 0,
                    dev_bytes: 0,
                    host: core::ptr::null_mut(),
                    host_bytes: 0,
                }))
            })
            .clone()
    };
    stream
        .context()
        .bind_to_thread()
        .map_err(driver("cuCtxSetCurrent"))?;
    Ok(StagingGuard { entry })
}

/// Holds a stream's staging entry.
pub(crate) struct StagingGuard {
    entry: Entry,
}

impl StagingGuard {
    /// Runs `f` with the staging memory locked.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Staging) -> Result<R>) -> Result<R> {
        let mut s: MutexGuard<'_, Staging> = self.entry.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s)
    }
}

impl Staging {
    /// A device buffer of at least `bytes` bytes, usable on `stream`.
    pub(crate) fn device(&mut self, stream: &CudaStream, bytes: usize) -> Result<u64> {
        if bytes > self.dev_bytes {
            let new = bytes.max(self.dev_bytes.saturating_mul(2));
            stream
                .synchronize()
                .map_err(driver("cuStreamSynchronize (staging growth)"))?;
            let mut p = 0u64;
            // SAFETY: plain allocation in the current context (bound by `lock`).
            unsafe {
                if self.dev != 0 {
                    sys::cuMemFree_v2(self.dev)
                        .result()
                        .map_err(driver("cuMemFree (staging)"))?;
                    self.dev = 0;
                    self.dev_bytes = 0;
                }
                sys::cuMemAlloc_v2(&mut p, new)
                    .result()
                    .map_err(driver("cuMemAlloc (staging)"))?;
            }
            self.dev = p;
            self.dev_bytes = new;
        }
        Ok(self.dev)
    }

    /// A pinned host buffer of at least `bytes` bytes.
    pub(crate) fn host(&mut self, stream: &CudaStream, bytes: usize) -> Result<*mut u8> {
        if bytes > self.host_bytes {
            let new = bytes.max(self.host_bytes.saturating_mul(2));
            stream
                .synchronize()
                .map_err(driver("cuStreamSynchronize (staging growth)"))?;
            let mut p: *mut core::ffi::c_void = core::ptr::null_mut();
            // SAFETY: plain allocation in the current context (bound by `lock`).
            unsafe {
                if !self.host.is_null() {
                    sys::cuMemFreeHost(self.host.cast())
                        .result()
                        .map_err(driver("cuMemFreeHost (staging)"))?;
                    self.host = core::ptr::null_mut();
                    self.host_bytes = 0;
                }
                sys::cuMemAllocHost_v2(&mut p, new)
                    .result()
                    .map_err(driver("cuMemAllocHost (staging)"))?;
            }
            self.host = p.cast();
            self.host_bytes = new;
        }
        Ok(self.host)
    }
}
