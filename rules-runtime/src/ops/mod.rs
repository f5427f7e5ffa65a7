//! The shadow operations: `accumulate`, `zero` and the fused `accumulate_and_zero`, for every pair
//! of memory kinds and across CUDA contexts. This module is the one face for shadow work, and the
//! one place that decides where it runs:
//!
//! 1. `plan` checks everything (lengths, memory kinds, the stream, contexts, overlap) and picks
//!    the `Route` once: host loops, one stream, staged through host memory, or another context.
//!    Nothing is written.
//! 2. `Plan::run` does the work on that route: the host loops in `host`, kernels and staging
//!    through `device`, or the cross-context paths in `cross`. Where a step can still
//!    fail after the first write (a driver call), the zeroing of the source comes last.
//!
//! The copy rules plan every lane before running any, so a bad lane changes nothing.
//!
//! Where each part lives:
//! - here: the public face of whole-buffer work ([`accumulate`], [`zero`],
//!   [`accumulate_and_zero`]), the thresholds that pick between kernels (defined with the kernels
//!   in `device`), and the words the routing shares (`Op`, `Source`);
//! - `route`: the deciding: `plan` and `plan_with`, the `Route` and the `Plan` that runs on it,
//!   the stream, capture and context checks, and the one-launch device path;
//! - `host`, `par`, `pipeline`: host loops, staging, and the pinned pipelines; `cross`: work
//!   across contexts;
//! - `region` (with `region::host` and `region::array`), `sum`, `saved`: the same operations on
//!   boxes (pitched regions, CUDA arrays), their sums, and the save and restore of a box;
//! - `reserve`: `cuda::reserve`, what the first operations on a context would pay, paid ahead.
#![forbid(unsafe_code)]

pub(crate) mod cross;
pub use crate::device::kernels::{FUSED_SPLIT_BYTES, STREAMING_ZERO_BYTES};
pub(crate) use crate::driver::capturing;
pub use on::{AsStream, On};
pub(crate) use route::{Operand, Plan, Route, StreamRef, plan, plan_with, refuse_call_in_capture};
pub use saved::{SavedRegion, restore_region, save_region};
pub use sum::{accumulate_sum_region, sum_region};
pub(crate) mod check;
mod host;
mod on;
pub mod region;
pub(crate) mod reserve;
mod route;
mod saved;
mod sum;

use crate::error::Result;
use crate::memory::{ShadowMemory, ShadowRead};
use route::stream_for;

/// `acc += src`, element-wise, on the stream `on` names. Lengths must match; `acc` and `src` may
/// live in any memory kinds and, for device memory, on different CUDA contexts (devices).
///
/// If `acc` and `src` are the same memory, `acc` is doubled; a partial overlap is refused.
/// Everything is checked before anything is written.
///
/// Device-reachable operands are only enqueued. With host memory the host does part of the work,
/// and the call returns once that part is done: always for pageable memory, and for page-locked
/// memory from 8 MiB per operand (the host adds into a page-locked `acc` what the copy engine
/// brings over, pipelined with the link), except during a graph capture, where every
/// device-reachable route stays one kernel.
pub fn accumulate<A, B>(on: On<'_>, acc: &mut A, src: &B) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    let src = crate::memory::ReadOnly(src);
    plan(on, Op::Accumulate, &*acc, Some(&src))?.run(acc, Source::Read(&src))
}

/// `buf ← 0`, on the stream `on` names (on `buf`'s own context if that is another one).
pub fn zero<A: ShadowMemory + ?Sized>(on: On<'_>, buf: &mut A) -> Result<()> {
    plan::<A, A>(on, Op::Zero, &*buf, None)?.run::<A, A>(buf, Source::None)
}

/// `acc += src; src ← 0` in one pass (one kernel launch for device data): the reverse of a copy
/// `src → acc`'s destination. `acc` and `src` may live in any memory kinds and on different
/// CUDA contexts.
///
/// If `acc` and `src` are the same memory this is the identity (the reverse of a self-copy keeps
/// its cotangent); a partial overlap is refused before anything is written.
///
/// As for [`accumulate`], host memory gives the host a share of the work and the call returns once
/// it is done; for a page-locked `src` of 8 MiB or more that share is zeroing it, chunk by chunk
/// behind the kernel that reads it, instead of writing zeros over the link. If a driver call fails
/// midway through such a pipeline, every chunk is either moved whole (added and zeroed) or left as
/// it was.
pub fn accumulate_and_zero<A, B>(on: On<'_>, acc: &mut A, src: &mut B) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    plan(on, Op::AccumulateAndZero, &*acc, Some(&*src))?.run(acc, Source::Take(src))
}

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `acc += src`.
    Accumulate,
    /// `acc += src; src ← 0`.
    AccumulateAndZero,
    /// `acc ← 0` (no source).
    Zero,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Accumulate => "accumulate",
            Op::AccumulateAndZero => "accumulate_and_zero",
            Op::Zero => "zero",
        }
    }
}

/// The source operand as the work needs it.
pub(crate) enum Source<'b, B: ?Sized> {
    None,
    Read(&'b B),
    Take(&'b mut B),
}

impl<B: ShadowRead + ?Sized> Source<'_, B> {
    fn get(&self) -> Option<&B> {
        match self {
            Source::None => None,
            Source::Read(b) => Some(b),
            Source::Take(b) => Some(b),
        }
    }
}

#[cfg(test)]
mod tests;
