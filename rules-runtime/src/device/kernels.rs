//! Raw kernel launches and driver calls on device addresses, in one place (cudarc's `result`
//! layer in spirit). Every function binds the stream's context before calling the driver.
//!
//! The kernels are shipped as PTX (`shadow.ptx`, built from `shadow.cu` by `regen.sh`) and loaded
//! once per context by the pool ([`crate::driver::pool::kernels`]); the driver JIT-compiles them, so no
//! CUDA toolkit is needed at run time.

use crate::driver::driver;
use crate::driver::pool;
use crate::driver::probe;
use crate::element::{Differentiable, Dtype};
use crate::error::{Error, Result, check_len};
use crate::memory::Overlap;
use crate::memory::view::{DevMut, DevRef};
use cudarc::driver::{CudaStream, sys};

/// Per-operand size from which `accumulate_and_zero` with both operands in device memory is the
/// accumulate kernel followed by a driver memset instead of the one fused launch. Below it,
/// saving a launch is what counts; above it, the driver's memset writes faster than a kernel that
/// mixes reads and writes (measurements in the README).
pub const FUSED_SPLIT_BYTES: usize = 32 << 20;

/// Per-operand size from which zeroing device memory (a [`zero`](crate::zero), and the zeroing half
/// of that split) is a kernel of streaming stores instead of the driver's memset: right after the
/// accumulate kernel it was the faster of the two from 128 MiB and the slower at 32-64 MiB; alone
/// it was 2-4% faster from 64 MiB (docs/performance-notes.md).
pub const STREAMING_ZERO_BYTES: usize = 128 << 20;

/// Threads per block. One 16-byte vector per thread per iteration. 512 and 1024 were no faster
/// (`tools/kernel-explore`; docs/performance-notes.md).
pub(crate) const THREADS: u32 = 256;
/// Grid limit in x.
const MAX_BLOCKS: u64 = (1 << 31) - 1;

/// The real kernel (an index into [`REALS`](crate::driver::pool::modules::REALS)) a dtype runs
/// on, and how many reals one element is.
pub(crate) fn real_kernel(dtype: Dtype) -> (usize, u64) {
    match dtype {
        Dtype::F32 => (0, 1),
        Dtype::F64 => (1, 1),
        Dtype::F16 => (2, 1),
        Dtype::Bf16 => (3, 1),
        Dtype::C32 => (0, 2),
        Dtype::C64 => (1, 2),
    }
}

/// `acc += src` on `stream`. The views must have the same length, and be disjoint or the same
/// memory (then `acc` doubles: each element is read before it is written, by one thread).
pub(crate) fn accumulate<T: Differentiable>(
    stream: &CudaStream,
    acc: &mut DevMut<'_, T>,
    src: &DevRef<'_, T>,
) -> Result<()> {
    check_len("the source of `accumulate`", acc.len(), src.len())?;
    match acc.region().relation(src.region()) {
        Overlap::Partial => Err(Error::partial_overlap(
            "accumulate",
            acc.region(),
            src.region(),
        )),
        // SAFETY: both views hold `acc.len()` elements ordered on `stream`, disjoint or the same.
        _ => unsafe {
            launch_accumulate(stream, T::DTYPE, acc.addr(), src.addr(), acc.len(), false)
        },
    }
}

/// How [`accumulate_and_zero`] zeroes its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Zeroing {
    /// In the same pass as the accumulation: one launch.
    Fused,
    /// After it: the accumulate kernel, then a memset (`streaming`: the streaming-store kernel).
    Split { streaming: bool },
}

/// `acc += src; src ← 0` on `stream`. The views must have the same length; the same memory is
/// the identity (nothing is launched), and a partial overlap is refused.
pub(crate) fn accumulate_and_zero<T: Differentiable>(
    stream: &CudaStream,
    acc: &mut DevMut<'_, T>,
    src: &mut DevMut<'_, T>,
    how: Zeroing,
) -> Result<()> {
    check_len("the source of `accumulate_and_zero`", acc.len(), src.len())?;
    let n = acc.len();
    match (acc.region().relation(src.region()), how) {
        (Overlap::Partial, _) => Err(Error::partial_overlap(
            "accumulate_and_zero",
            acc.region(),
            src.region(),
        )),
        (Overlap::Same, _) => Ok(()),
        // SAFETY: both views hold `n` elements ordered on `stream`, disjoint.
        (Overlap::Disjoint, Zeroing::Fused) => unsafe {
            launch_accumulate(stream, T::DTYPE, acc.addr(), src.addr(), n, true)
        },
        (Overlap::Disjoint, Zeroing::Split { streaming }) => {
            // SAFETY: as above.
            unsafe { launch_accumulate(stream, T::DTYPE, acc.addr(), src.addr(), n, false)? };
            zero(stream, src, streaming)
        }
    }
}

/// `buf ← 0` on `stream`: the driver's memset, or (`streaming`) the streaming-store kernel.
pub(crate) fn zero<T>(stream: &CudaStream, buf: &mut DevMut<'_, T>, streaming: bool) -> Result<()> {
    let bytes = buf.len() * size_of::<T>();
    // SAFETY: the view holds `bytes` bytes ordered on `stream`.
    unsafe {
        if streaming {
            zero_streaming(stream, buf.addr(), bytes)
        } else {
            memset_zero(stream, buf.addr(), bytes)
        }
    }
}

/// Launches `acc[i] += src[i]` (and `src[i] = 0` when `zero_src`) for `n` elements of `dtype`
/// at device addresses `acc` and `src`, on `stream`. `n == 0` launches nothing.
///
/// # Safety
/// Both addresses must be valid on `stream`'s device for `n` elements, and ordered on `stream`;
/// disjoint, or the same address without `zero_src`.
pub(crate) unsafe fn launch_accumulate(
    stream: &CudaStream,
    dtype: Dtype,
    acc: u64,
    src: u64,
    n: usize,
    zero_src: bool,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let lookup = probe::span("pool::kernels (lookup)");
    let loaded = pool::kernels(stream.context())?;
    drop(lookup);
    let (index, reals) = real_kernel(dtype);
    let f = if zero_src {
        loaded.fused[index]
    } else {
        loaded.accumulate[index]
    };
    let mut reals_n = n as u64 * reals;
    let per_vector = 16 / (dtype.size() as u64 / reals);
    let blocks = reals_n
        .div_ceil(per_vector)
        .div_ceil(u64::from(THREADS))
        .clamp(1, MAX_BLOCKS);
    let (mut acc, mut src) = (acc, src);
    // The kernel's parameters are (ptr, ptr, u64). Launched through the driver directly, with the
    // parameter array on the stack: the small-n cost is the launch itself and nothing around it.
    let mut params: [*mut core::ffi::c_void; 3] = [
        (&raw mut acc).cast(),
        (&raw mut src).cast(),
        (&raw mut reals_n).cast(),
    ];
    bind(stream)?;
    let _p = probe::span("cuLaunchKernel");
    // SAFETY: `params` matches the kernel's signature and outlives the call, which copies them;
    // the addresses are valid on `stream` by the caller's contract.
    unsafe {
        cudarc::driver::result::launch_kernel(
            f,
            (blocks as u32, 1, 1),
            (THREADS, 1, 1),
            0,
            stream.cu_stream(),
            &mut params,
        )
    }
    .map_err(driver("cuLaunchKernel (shadow kernel)"))
}

/// Launches a kernel that does nothing (one block of one thread): the launch-overhead ceiling
/// that benchmarks compare small accumulations with (`testing::kernels`).
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub fn empty_launch(stream: &CudaStream) -> Result<()> {
    crate::driver::require_driver()?;
    let loaded = pool::kernels(stream.context())?;
    bind(stream)?;
    // SAFETY: the kernel takes no parameters.
    unsafe {
        cudarc::driver::result::launch_kernel(
            loaded.empty,
            (1, 1, 1),
            (1, 1, 1),
            0,
            stream.cu_stream(),
            &mut [],
        )
    }
    .map_err(driver("cuLaunchKernel (empty)"))
}

/// A small staged reverse, rehearsed on `stream` with pooled buffers only, for
/// `cuda::reserve`: a memset, a device → host copy into each of two page-locked buffers of at
/// least `bytes`, and a launch that reads each in place, as the staged routes of a reverse
/// through host memory do. What a first reverse pays inside the driver for these (first use of
/// each path on the stream) and in the pool (an event per buffer, made at its first lease) is paid
/// here instead. The caller's memory is not touched, and nothing waits: the buffers' ends of use
/// are recorded on `stream`.
pub(crate) fn rehearse(stream: &CudaStream, bytes: usize) -> Result<()> {
    use pool::{Lease, Memory};
    let bytes = rehearsal_bytes(bytes);
    let n = bytes / size_of::<f32>();
    let mut dev = Lease::new(Memory::Device, bytes, stream, stream)?;
    let mut staged = [
        Lease::new(Memory::PinnedHost, bytes, stream, stream)?,
        Lease::new(Memory::PinnedHost, bytes, stream, stream)?,
    ];
    zero(stream, &mut dev.view_mut::<f32>(n)?, false)?;
    for p in &mut staged {
        let (to, from) = (p.host_ptr_mut::<f32>(n)?, dev.view::<f32>(n)?);
        // SAFETY: `to` is leased page-locked memory of at least `n` f32 (checked by
        // `host_ptr_mut`), `from` a leased device buffer of `n` f32 (checked by `view`), both
        // ordered on `stream`, distinct buffers.
        unsafe { copy_dtoh(stream, to, from.addr(), n * size_of::<f32>())? };
        drop(from);
        accumulate(stream, &mut dev.view_mut::<f32>(n)?, &p.view::<f32>(n)?)?;
    }
    Ok(())
}

/// The bytes each buffer of [`rehearse`]`(_, bytes)` leases: whole f32 elements, at least one, at
/// most 4 KiB (the rehearsal is about first uses, not sizes). `cuda::reserve` pools them first.
pub(crate) fn rehearsal_bytes(bytes: usize) -> usize {
    bytes.clamp(1, 4096).div_ceil(size_of::<f32>()) * size_of::<f32>()
}

/// Sets `bytes` bytes at device address `ptr` to zero on `stream` (all supported element types
/// are zero when all their bits are), with the widest memset the alignment allows.
///
/// # Safety
/// `ptr .. ptr + bytes` must be valid device-accessible memory ordered on `stream`.
pub(crate) unsafe fn memset_zero(stream: &CudaStream, ptr: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    bind(stream)?;
    let s = stream.cu_stream();
    // SAFETY: by the caller's contract.
    let r = unsafe {
        if ptr.is_multiple_of(4) && bytes.is_multiple_of(4) {
            sys::cuMemsetD32Async(ptr, 0, bytes / 4, s)
        } else if ptr.is_multiple_of(2) && bytes.is_multiple_of(2) {
            sys::cuMemsetD16Async(ptr, 0, bytes / 2, s)
        } else {
            sys::cuMemsetD8Async(ptr, 0, bytes, s)
        }
    };
    r.result().map_err(driver("cuMemsetAsync"))
}

/// Sets `bytes` bytes at device address `ptr` to zero on `stream` with a kernel of 16-byte
/// streaming stores (`zero_streaming`), which is faster than [`zero`]'s driver memset for large
/// operands, alone or right after the accumulate kernel.
///
/// # Safety
/// As for [`memset_zero`].
pub(crate) unsafe fn zero_streaming(stream: &CudaStream, ptr: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let loaded = pool::kernels(stream.context())?;
    let blocks = (bytes as u64)
        .div_ceil(16)
        .div_ceil(u64::from(THREADS))
        .clamp(1, MAX_BLOCKS);
    let (mut p, mut b) = (ptr, bytes as u64);
    let mut params: [*mut core::ffi::c_void; 2] = [(&raw mut p).cast(), (&raw mut b).cast()];
    bind(stream)?;
    // SAFETY: `params` matches the kernel's signature (ptr, u64) and outlives the call; the range
    // is valid on `stream` by the caller's contract.
    unsafe {
        cudarc::driver::result::launch_kernel(
            loaded.zero_streaming,
            (blocks as u32, 1, 1),
            (THREADS, 1, 1),
            0,
            stream.cu_stream(),
            &mut params,
        )
    }
    .map_err(driver("cuLaunchKernel (zero_streaming)"))
}

/// Copies `bytes` bytes from device `src` to host `dst` on `stream`.
///
/// # Safety
/// Valid ranges; `dst` holds the data once the stream has reached the copy.
pub(super) unsafe fn copy_dtoh(
    stream: &CudaStream,
    dst: *mut u8,
    src: u64,
    bytes: usize,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    bind(stream)?;
    // SAFETY: by the caller's contract.
    unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream.cu_stream()) }
        .result()
        .map_err(driver("cuMemcpyDtoHAsync"))
}

/// Makes `stream`'s context current on this thread: the driver calls above act on it.
pub(crate) fn bind(stream: &CudaStream) -> Result<()> {
    let _p = probe::span("bind (cuCtxGetCurrent/SetCurrent)");
    stream
        .context()
        .bind_to_thread()
        .map_err(driver("cuCtxSetCurrent"))
}

/// `dst ← src` between two contexts (`cuMemcpyPeerAsync`), on `stream`, a stream of the source's
/// context; `dst` is a view of memory on `dst_ctx`, ordered on `stream` by the caller. The views
/// must have the same length.
pub(crate) fn copy_peer<T>(
    stream: &CudaStream,
    dst: &mut DevMut<'_, T>,
    dst_ctx: &cudarc::driver::CudaContext,
    src: &DevRef<'_, T>,
) -> Result<()> {
    check_len("the source of a peer copy", dst.len(), src.len())?;
    let bytes = dst.len() * size_of::<T>();
    if bytes == 0 {
        return Ok(());
    }
    bind(stream)?;
    // SAFETY: both views hold `bytes` bytes, `dst` on `dst_ctx` and `src` on `stream`'s context;
    // on different contexts they cannot overlap.
    unsafe {
        sys::cuMemcpyPeerAsync(
            dst.addr(),
            dst_ctx.cu_ctx(),
            src.addr(),
            stream.context().cu_ctx(),
            bytes,
            stream.cu_stream(),
        )
    }
    .result()
    .map_err(driver("cuMemcpyPeerAsync (peer accumulate)"))
}
