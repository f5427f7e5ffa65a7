//! The checked mode's compare on the device (`check.cu`): does a box of device-reachable memory
//! hold what a rule assumes its primitive wrote? One launch on the copy's stream, then one read
//! back of the count and the first indices, for which the host waits. The kernels are a module of
//! their own (`check.ptx`), loaded by the pool on a context's first compare.

use super::kernels::{THREADS, bind};
use crate::driver::driver;
use crate::driver::pool::{self, Lease, Memory};
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::view::DevRef;
use crate::region::Pitched;
use cudarc::driver::{CudaStream, sys};

/// How many of the first mismatching indices the kernel keeps (`SLOTS` in `check.cu`).
pub(crate) const SLOTS: usize = 8;

/// Blocks at most along a row, and in all: the kernel strides over what its grid does not cover.
const ROW_BLOCKS: u64 = 4096;
const ALL_BLOCKS: u64 = 16384;

/// What the box is compared with.
pub(crate) enum Against<'a, 'v, T> {
    /// The same element of this box of the same shape (a copy).
    Box(&'a DevRef<'v, T>, &'a Pitched),
    /// The box's own first element (a memset: one repeated bit pattern).
    First,
    /// This value (a fill).
    Value(T),
}

/// What a compare found: how many elements differ, and the first few of them (indices in the
/// box, `x + width * (y + height * z)`, increasing).
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) count: u64,
    pub(crate) first: Vec<u64>,
}

/// Compares `dst[r]` bitwise with `against`, on `stream`, and waits for the answer.
pub(crate) fn compare<T: Differentiable>(
    stream: &CudaStream,
    (dst, r): (&DevRef<'_, T>, &Pitched),
    against: Against<'_, '_, T>,
) -> Result<Found> {
    let size = size_of::<T>();
    let sd = r.check::<T>("the checked box", dst.len())?;
    let base = dst.addr() + (sd.offset * size) as u64;
    // (address, step along a row, row, slice) of the expected side, in elements; 0: a value.
    let (s, step, srow, sslice, value) = match against {
        Against::Box(src, rs) => {
            if rs.shape() != r.shape() {
                return Err(Error::BadRegion {
                    what: "the source".into(),
                    why: format!(
                        "its box is {:?} (width, height, depth) but the destination's is {:?}",
                        rs.shape(),
                        r.shape()
                    ),
                });
            }
            let ss = rs.check::<T>("the source's box", src.len())?;
            let at = src.addr() + (ss.offset * size) as u64;
            (at, 1, ss.row as u64, ss.slice as u64, [0; 2])
        }
        Against::First => (base, 0, 0, 0, [0; 2]),
        Against::Value(v) => (0, 0, 0, 0, value_words(v)),
    };
    if r.elements() == 0 {
        return Ok(Found::default());
    }
    let (mut w, mut h, mut d) = (r.width as u64, r.height as u64, r.depth as u64);
    let (drow, dslice) = (sd.row as u64, sd.slice as u64);
    // One run of elements on every side compared is one long row: no per-row arithmetic.
    let dense = |row: u64, slice: u64| h * d == 1 || (row == w && (d == 1 || slice == w * h));
    if dense(drow, dslice) && (step == 0 || dense(srow, sslice)) {
        (w, h, d) = (w * h * d, 1, 1);
    }
    let index = match size {
        2 => 0,
        4 => 1,
        8 => 2,
        _ => 3,
    };
    let f = pool::check_kernels(stream.context())?[index];
    let bytes = (1 + SLOTS) * 8;
    let out = Lease::new(Memory::Device, bytes, stream, stream)?;
    let back = Lease::new(Memory::PinnedHost, bytes, stream, stream)?;
    let gx = w.div_ceil(u64::from(THREADS)).clamp(1, ROW_BLOCKS);
    let gy = (h * d).clamp(1, (ALL_BLOCKS / gx).max(1));
    let mut params_v: [u64; 13] = [
        base,
        drow,
        dslice,
        s,
        step,
        srow,
        sslice,
        w,
        h,
        d,
        value[0],
        value[1],
        out.ptr(),
    ];
    let mut params: [*mut core::ffi::c_void; 13] =
        core::array::from_fn(|i| (&raw mut params_v[i]).cast());
    bind(stream)?;
    // SAFETY: `out` is a leased device buffer of `bytes` bytes, ours while leased; the memsets
    // write only it (the count to 0, the slots to all ones, as `check.cu` expects).
    unsafe {
        sys::cuMemsetD8Async(out.ptr(), 0, 8, stream.cu_stream())
            .result()
            .map_err(driver("cuMemsetD8Async (checked mode)"))?;
        sys::cuMemsetD8Async(out.ptr() + 8, 0xff, SLOTS * 8, stream.cu_stream())
            .result()
            .map_err(driver("cuMemsetD8Async (checked mode)"))?;
    }
    // SAFETY: the parameters match `check_bN`'s signature (thirteen 64-bit words, written next
    // to it in `check.cu`) and outlive the call, which copies them; the boxes lie in their views
    // (checked above, the source's shape compared), which are device-reachable memory ordered on
    // `stream`, and are only read; `out` holds the count and the slots.
    unsafe {
        cudarc::driver::result::launch_kernel(
            f,
            (gx as u32, gy as u32, 1),
            (THREADS, 1, 1),
            0,
            stream.cu_stream(),
            &mut params,
        )
    }
    .map_err(driver("cuLaunchKernel (checked mode's compare)"))?;
    // SAFETY: `back` is leased page-locked memory of `bytes` bytes, `out` a leased device buffer
    // of as many, both ordered on `stream`, distinct buffers.
    unsafe { super::kernels::copy_dtoh(stream, back.ptr() as *mut u8, out.ptr(), bytes)? };
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize (checked mode's compare)"))?;
    // SAFETY: the stream is synchronised: the pinned lease holds the copied words (page-aligned,
    // so aligned for u64), and no device work touches it until it drops.
    let got = unsafe { core::slice::from_raw_parts(back.ptr() as *const u64, 1 + SLOTS) };
    let count = got[0];
    let first = got[1..]
        .iter()
        .copied()
        .take(count.min(SLOTS as u64) as usize)
        .collect();
    Ok(Found { count, first })
}

/// A value's bytes as the kernel takes them: two little-endian words.
fn value_words<T: Differentiable>(v: T) -> [u64; 2] {
    // SAFETY: every `Differentiable` type is plain old data (floats and pairs of floats) of at
    // most 16 bytes.
    let bytes = unsafe { core::slice::from_raw_parts((&raw const v).cast::<u8>(), size_of::<T>()) };
    let mut words = [0u64; 2];
    for (i, b) in bytes.iter().enumerate() {
        words[i / 8] |= u64::from(*b) << (8 * (i % 8));
    }
    words
}
