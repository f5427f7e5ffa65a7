//! Paying up front, once per context, what the first shadow operations there would pay inside a
//! call (public as `cuda::reserve`): the pool's buffers, the host's threads, and a rehearsal of a
//! staged reverse.

use crate::device::kernels;
use crate::device::pipeline::{MIN_BYTES, PIPELINE_BYTES};
use crate::driver::pool::{self, Memory};
use crate::driver::{capturing, prepare, require_driver};
use crate::error::{Error, Result};
use cudarc::driver::CudaStream;

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
/// pay inside a call: the kernels' module load ([`prepare`](crate::cuda::prepare)), the start of
/// the host's threads, the page-locked staging buffers that reverses through host memory lease from the runtime's pool,
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
    require_driver()?;
    // Allocating page-locked memory and rehearsing on the stream would break a capture (global
    // mode refuses allocations) or record pooled work into the user's graph: refused first.
    if capturing(stream)? {
        return Err(Error::Capturing {
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
        let rehearsal = kernels::rehearsal_bytes(small);
        pool::reserve(ctx, Memory::Device, rehearsal, 1)?;
        Ok((small_bytes, pipeline_bytes))
    })?;
    // The first launch, memset and device → host copy on a stream, and a pooled buffer's first
    // lease, cost more than the next ones: rehearsed here on pooled buffers.
    kernels::rehearse(stream, small)?;
    Ok(Reserved {
        small_pinned_bytes,
        pipeline_pinned_bytes,
        host_threads: rayon::current_num_threads(),
    })
}
