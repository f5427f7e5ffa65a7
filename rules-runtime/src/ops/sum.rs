//! Sums over boxes: the reverse of a fill, whose value's derivative is the sum of the filled
//! region's cotangent. Deterministic: the same inputs give the same bits on every run (a fixed
//! order of additions in `f64`, no atomics), on the device and on the host alike (each with its
//! own fixed order).

use super::region::{cross_refused, no_address, route, sync};
use super::{On, Op, Route};
use crate::device::kernels;
use crate::device::region as boxes;
use crate::driver::pool::Lease;
use crate::element::Differentiable;
use crate::error::{Result, check_len};
use crate::memory::rows::{for_each_row, for_each_row_mut};
use crate::memory::view::{DevMut, DevRef};
use crate::memory::{ShadowMemory, ShadowRead};
use crate::region::Pitched;

/// The sum of `buf[r]`, per lane the derivative of a fill's value: the same bits on every run
/// for the same input (a fixed order of additions, no atomics), each element added in `f64`
/// (real and imaginary parts apart). Device memory is summed on the stream, which is then waited
/// for; host memory by the host in pairs of partial sums.
///
/// Error bound: with `n` elements, `|sum - exact| ≤ (⌈n/t⌉ + 33) · 2^-53 · Σ|x|` before the
/// final rounding to the element type, where `t` is the number of threads of the first pass (at
/// least 1) and 33 bounds the additions after a thread's own chain (its vector lanes, the head
/// and tail of a row, the block's tree, the second pass); for f32, f16 and bf16 that is far
/// below half a unit in the last place of the result for any `n < 2^40`.
pub fn sum_region<A: ShadowRead + ?Sized>(on: On<'_>, buf: &A, r: Pitched) -> Result<A::Elem> {
    r.check::<A::Elem>("the summed buffer", buf.len())?;
    if r.elements() == 0 {
        return Ok(A::Elem::zero());
    }
    if buf.array().is_some() {
        // Staged into linear memory; the sum waits for the stream, so the lease outlives its use.
        let stream = super::region::array::stream(on, "a CUDA array")?;
        let (st, packed) = super::region::array::staged(stream, buf, r)?;
        return sum_region(On::Stream(stream), &st, packed);
    }
    let kind = buf.kind();
    match route::<A, A>(on, Op::Accumulate, buf, None)? {
        Route::Host { after } => {
            sync(after.as_deref())?;
            host_sum(buf, &r)
        }
        Route::Device { stream } => {
            // Partial sums in pooled memory (and, for a host result, a wait): not capturable.
            if super::capturing(&stream)? {
                return Err(crate::error::Error::Capturing { op: "sum_region" });
            }
            let d =
                DevRef::of(buf, &stream).ok_or_else(|| no_address(Op::Accumulate, kind, kind))?;
            let got = boxes::sum_to_host(&stream, (&d, &r))?;
            Ok(A::Elem::from_parts([got[0], imaginary::<A::Elem>(got)]))
        }
        Route::Cross(_) => Err(cross_refused(Op::Accumulate, kind, kind)),
        _ => Err(no_address(Op::Accumulate, kind, kind)),
    }
}

/// The imaginary part of a sum's components, for complex elements (0 for reals).
fn imaginary<T: Differentiable>(got: [f64; 2]) -> f64 {
    if T::PARTS == 2 { got[1] } else { 0.0 }
}

/// The host sum: each row added in `f64` in order, the row sums combined pairwise.
fn host_sum<B: ShadowRead + ?Sized>(buf: &B, r: &Pitched) -> Result<B::Elem> {
    let mut rows: Vec<[f64; 2]> = Vec::with_capacity(r.height * r.depth);
    for_each_row(buf, r, |row| {
        let mut acc = [0.0f64; 2];
        for x in row {
            let p = x.to_parts();
            acc[0] += p[0];
            acc[1] += p[1];
        }
        rows.push(acc);
    })?;
    while rows.len() > 1 {
        rows = rows
            .chunks(2)
            .map(|c| match c {
                [a, b] => [a[0] + b[0], a[1] + b[1]],
                [a] | [a, ..] => *a,
                [] => [0.0; 2],
            })
            .collect();
    }
    Ok(B::Elem::from_parts(
        rows.first().copied().unwrap_or([0.0; 2]),
    ))
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
        return Err(crate::error::Error::Aliasing {
            what: "the value's shadow".into(),
            other: "the summed box".into(),
            start: a.start.max(boxed.start),
            end: a.end.min(boxed.end),
        });
    }
    if src.array().is_some() {
        let stream = super::region::array::stream(on, "a CUDA array")?;
        let (st, packed) = super::region::array::staged(stream, src, r)?;
        return accumulate_sum_region(On::Stream(stream), acc, &st, packed);
    }
    let (acc_kind, src_kind) = (acc.kind(), src.kind());
    let no_address = || no_address(Op::Accumulate, acc_kind, src_kind);
    match route(on, Op::Accumulate, &*acc, Some(src))? {
        Route::Nothing => Ok(()),
        Route::Host { after } => {
            sync(after.as_deref())?;
            let total = host_sum(src, &r)?;
            let one = Pitched::linear::<A::Elem>(0, 1);
            for_each_row_mut(acc, &one, |h| h[0] = A::Elem::add(h[0], total))
        }
        // The pinned route is planned for whole buffers only; a box keeps the device route.
        Route::Device { stream } | Route::TakePinned { stream } => {
            // Partial sums in pooled memory (and, for a host result, a wait): not capturable.
            if super::capturing(&stream)? {
                return Err(crate::error::Error::Capturing { op: "sum_region" });
            }
            let d = DevRef::of(src, &stream).ok_or_else(no_address)?;
            let mut a = DevMut::of(acc, &stream).ok_or_else(no_address)?;
            boxes::sum_into(&stream, (&d, &r), &mut a)
        }
        Route::StageIn { stream } => {
            // A device-reachable value shadow, a host-only box: summed by the host once the
            // stream has finished with the box (queued copies may still write a page-locked
            // one), then added on the stream from pooled pinned memory.
            sync(Some(&stream))?;
            let total = host_sum(src, &r)?;
            let stage = Lease::pinned_copy_of(&[total], &stream)?;
            let mut a = DevMut::of(acc, &stream).ok_or_else(no_address)?;
            kernels::accumulate(&stream, &mut a, &stage.view(1)?)
        }
        Route::StageOut { stream } => {
            // A host-only value shadow, a device-reachable box: summed on the device into pooled
            // pinned memory, added by the host once the stream has finished.
            let d = DevRef::of(src, &stream).ok_or_else(no_address)?;
            let got = boxes::sum_to_host(&stream, (&d, &r))?;
            let total = A::Elem::from_parts([got[0], imaginary::<A::Elem>(got)]);
            let one = Pitched::linear::<A::Elem>(0, 1);
            for_each_row_mut(acc, &one, |h| h[0] = A::Elem::add(h[0], total))
        }
        Route::Cross(_) => Err(cross_refused(Op::Accumulate, acc_kind, src_kind)),
    }
}
