//! Sums over boxes: the reverse of a fill, whose value's derivative is the sum of the filled
//! region's cotangent. Deterministic: the same inputs give the same bits on every run (a fixed
//! order of additions in `f64`, no atomics), on the device and on the host alike (each with its
//! own fixed order).

use super::region::{cross_refused, host_mut, host_of, no_address, route, shape, side, sync};
use super::{On, Op, Route};
use crate::cuda::driver;
use crate::device::pool::{Lease, Memory};
use crate::device::region::{self as launch, SumTo};
use crate::element::Differentiable;
use crate::error::{Result, check_len};
use crate::memory::{ShadowMemory, ShadowRead};
use crate::region::{Pitched, Strides};
use cudarc::driver::CudaStream;

/// The sum of `buf[r]`, per lane the derivative of a fill's value: the same bits on every run
/// for the same input (a fixed order of additions, no atomics), each element added in `f64`
/// (real and imaginary parts apart). Device memory is summed on the stream, which is then waited
/// for; host memory by the host in pairs of partial sums.
///
/// Error bound: with `n` elements, `|sum - exact| ≤ (n/t + log2(t) + 1) · 2^-53 · Σ|x|` before the
/// final rounding to the element type, where `t` is the number of partial sums (at least 1);
/// for f32, f16 and bf16 that is far below half a unit in the last place of the result for any
/// `n < 2^40`.
pub fn sum_region<A: ShadowRead + ?Sized>(on: On<'_>, buf: &A, r: Pitched) -> Result<A::Elem> {
    let s = r.check::<A::Elem>("the summed buffer", buf.len())?;
    if r.elements() == 0 {
        return Ok(A::Elem::zero());
    }
    if buf.array().is_some() {
        // Staged into linear memory; the sum waits for the stream, so the lease outlives its use.
        let stream = super::array::stream(on, "a CUDA array")?;
        let (lease, v, packed) = super::array::staged(stream, buf, r)?;
        let total = sum_region(On::Stream(stream), &v, packed);
        drop(lease);
        return total;
    }
    let kind = buf.kind();
    match route::<A, A>(on, Op::Accumulate, buf, None)? {
        Route::Host { after } => {
            sync(after.as_deref())?;
            Ok(host_sum(host_of(Op::Accumulate, buf)?, s, &r))
        }
        Route::Device { stream } => {
            // Partial sums in pooled memory (and, for a host result, a wait): not capturable.
            if super::capturing(&stream)? {
                return Err(crate::Error::Capturing { op: "sum_region" });
            }
            device_sum(&stream, buf, s, &r, || {
                no_address(Op::Accumulate, kind, kind)
            })
        }
        Route::Cross(_) => Err(cross_refused(Op::Accumulate, kind, kind)),
        _ => Err(no_address(Op::Accumulate, kind, kind)),
    }
}

/// The sum of `src[r]` on `stream` (partial sums in pooled device memory, the total in pooled
/// pinned memory), read once the stream has finished: the host waits.
fn device_sum<B: ShadowRead + ?Sized>(
    stream: &CudaStream,
    src: &B,
    s: Strides,
    r: &Pitched,
    no_address: impl FnOnce() -> crate::Error,
) -> Result<B::Elem> {
    let dtype = B::Elem::DTYPE;
    let parts = launch::sum_partials(dtype, shape(r)).max(1);
    let partials = Lease::new(Memory::Device, parts * 8, stream, stream)?;
    let out = Lease::new(Memory::PinnedHost, 16, stream, stream)?;
    {
        let d = src.device(stream).ok_or_else(no_address)?;
        // SAFETY: the box was checked against the buffer; the leases hold the partials and two
        // doubles; the result is read only after the stream has been synchronised.
        unsafe {
            launch::sum(
                stream,
                dtype,
                side::<B::Elem>(d.addr(), s),
                shape(r),
                partials.ptr(),
                SumTo::F64(out.ptr()),
            )?
        };
    }
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize (region sum)"))?;
    // SAFETY: pinned memory of 16 bytes, written by the finished kernel.
    let got = unsafe { core::slice::from_raw_parts(out.ptr() as *const f64, 2) };
    let imaginary = if launch::components(dtype) == 2 {
        got[1]
    } else {
        0.0
    };
    Ok(B::Elem::from_parts([got[0], imaginary]))
}

/// The host sum: each row added in `f64` in order, the row sums combined pairwise.
fn host_sum<T: Differentiable>(h: &[T], s: Strides, r: &Pitched) -> T {
    let mut rows: Vec<[f64; 2]> = Vec::with_capacity(r.height * r.depth);
    s.each_row(r, |e| {
        let mut acc = [0.0f64; 2];
        for x in &h[e..e + r.width] {
            let p = x.to_parts();
            acc[0] += p[0];
            acc[1] += p[1];
        }
        rows.push(acc);
    });
    while rows.len() > 1 {
        rows = rows
            .chunks(2)
            .map(|c| match c {
                [a, b] => [a[0] + b[0], a[1] + b[1]],
                [a] => *a,
                _ => unreachable!("chunks of two"),
            })
            .collect();
    }
    T::from_parts(rows.first().copied().unwrap_or([0.0; 2]))
}

/// `acc[0] += Σ src[r]`: the reverse of a fill whose value lives in a one-element buffer (a
/// `Duplicated` value), whose shadow `acc` receives the sum of the filled region's cotangent.
/// On the device the sum is added on the stream, rounded once to the element type, without a
/// host wait. `acc` must hold exactly one element; it may not share memory with the box.
pub fn accumulate_sum_region<A, B>(on: On<'_>, acc: &mut A, src: &B, r: Pitched) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    check_len("the value's shadow (one element)", 1, acc.len())?;
    let s = r.check::<A::Elem>("the summed buffer", src.len())?;
    if r.elements() == 0 {
        return Ok(());
    }
    let size = size_of::<A::Elem>() as u64;
    let (g, a) = (src.region(), acc.region());
    let boxed = crate::memory::Region {
        start: g.start + s.offset as u64 * size,
        end: g.start + s.end as u64 * size,
    };
    if a.relation(boxed) != crate::memory::Overlap::Disjoint {
        return Err(crate::Error::Aliasing {
            what: "the value's shadow".into(),
            other: "the summed box".into(),
            start: a.start.max(boxed.start),
            end: a.end.min(boxed.end),
        });
    }
    if src.array().is_some() {
        let stream = super::array::stream(on, "a CUDA array")?;
        let (lease, v, packed) = super::array::staged(stream, src, r)?;
        let done = accumulate_sum_region(On::Stream(stream), acc, &v, packed);
        drop(lease);
        return done;
    }
    let (acc_kind, src_kind) = (acc.kind(), src.kind());
    let dtype = A::Elem::DTYPE;
    match route(on, Op::Accumulate, &*acc, Some(src))? {
        Route::Nothing => Ok(()),
        Route::Host { after } => {
            sync(after.as_deref())?;
            let total = host_sum(host_of(Op::Accumulate, src)?, s, &r);
            let h = host_mut(Op::Accumulate, acc)?;
            h[0] = A::Elem::add(h[0], total);
            Ok(())
        }
        // The pinned route is planned for whole buffers only; a box keeps the device route.
        Route::Device { stream } | Route::TakePinned { stream } => {
            // Partial sums in pooled memory (and, for a host result, a wait): not capturable.
            if super::capturing(&stream)? {
                return Err(crate::Error::Capturing { op: "sum_region" });
            }
            let parts = launch::sum_partials(dtype, shape(&r)).max(1);
            let partials = Lease::new(Memory::Device, parts * 8, &stream, &stream)?;
            let d = src
                .device(&stream)
                .ok_or_else(|| no_address(Op::Accumulate, acc_kind, src_kind))?;
            let sd = side::<A::Elem>(d.addr(), s);
            let a = acc
                .device_mut(&stream)
                .ok_or_else(|| no_address(Op::Accumulate, acc_kind, src_kind))?;
            // SAFETY: the box was checked against its buffer; `a` holds one element; both are
            // device addresses ordered on `stream`, disjoint (checked above).
            unsafe {
                launch::sum(
                    &stream,
                    dtype,
                    sd,
                    shape(&r),
                    partials.ptr(),
                    SumTo::AddInto(a.addr()),
                )
            }
        }
        Route::StageIn { stream } => {
            // A device-reachable value shadow, a host-only box: summed by the host, then added
            // on the stream from pooled pinned memory.
            let stage = Lease::new(Memory::PinnedHost, size_of::<A::Elem>(), &stream, &stream)?;
            // The stream now waits for the staging buffer's previous use: once it is finished,
            // so is that use, and the box's host memory is no longer read by queued copies.
            sync(Some(&stream))?;
            let total = host_sum(host_of(Op::Accumulate, src)?, s, &r);
            // SAFETY: pinned memory of at least one element, aligned (page-aligned), not in use
            // (synchronised above).
            unsafe { (stage.ptr() as *mut A::Elem).write(total) };
            let a = acc
                .device_mut(&stream)
                .ok_or_else(|| no_address(Op::Accumulate, acc_kind, src_kind))?;
            // SAFETY: one element each, ordered on `stream`; pinned memory is device-reachable.
            unsafe {
                crate::device::kernels::accumulate(&stream, dtype, a.addr(), stage.ptr(), 1, false)
            }
        }
        Route::StageOut { stream } => {
            // A host-only value shadow, a device-reachable box: summed on the device into pooled
            // pinned memory, added by the host once the stream has finished.
            let total = device_sum(&stream, src, s, &r, || {
                no_address(Op::Accumulate, acc_kind, src_kind)
            })?;
            let h = host_mut(Op::Accumulate, acc)?;
            h[0] = A::Elem::add(h[0], total);
            Ok(())
        }
        Route::Cross(_) => Err(cross_refused(Op::Accumulate, acc_kind, src_kind)),
    }
}
