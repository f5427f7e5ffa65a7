//! Shadow work on boxes ([`Pitched`] regions) of a buffer: the operations behind the region rules
//! (pitched copies, memsets, fills). They take the same route as the whole-buffer operations
//! (decided once, in one place: host loops, one stream, staged in or out), and never
//! read or write a byte outside their boxes, padding between rows included.
//!
//! Everything is checked before the first write: each box against its buffer and element type,
//! the shapes against each other, the overlap of the two boxes row interval by row interval.
//!
//! The host loops of the two-box operations are in `host` (row by row: `crate::memory::rows`), the
//! routes with a CUDA array on either side in `array`; the helpers at the end of this file (route, errors) are shared with the sums, saves and array
//! operations.

pub(crate) mod array;
mod host;

use super::host::add;
use super::{On, Op, Operand, Route, Source, plan_with, stream_for};
use crate::device::region as boxes;
use crate::driver::driver;
use crate::driver::pool::Lease;
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::rows::{for_each_row, for_each_row_mut};
use crate::memory::view::{DevMut, DevRef};
use crate::memory::{MemoryKind, Overlap, Region, ShadowMemory, ShadowRead};
use crate::region::{Pitched, Strides, relation};
use cudarc::driver::CudaStream;
use host::host_pair;

/// `acc[ra] += src[rb]`: boxes of the same shape, in any memory kinds. The same box of the same
/// memory doubles; boxes sharing some bytes otherwise are refused.
pub fn accumulate_region<A, B>(
    on: On<'_>,
    acc: &mut A,
    ra: Pitched,
    src: &B,
    rb: Pitched,
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    let src = crate::memory::ReadOnly(src);
    pair(on, Op::Accumulate, acc, ra, Source::Read(&src), rb)
}

/// `acc[ra] += src[rb]; src[rb] ← 0` in one pass: the reverse of a pitched copy `src → acc`.
/// The same box of the same memory is the identity (the reverse of a self-copy).
pub fn accumulate_and_zero_region<A, B>(
    on: On<'_>,
    acc: &mut A,
    ra: Pitched,
    src: &mut B,
    rb: Pitched,
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    pair(on, Op::AccumulateAndZero, acc, ra, Source::Take(src), rb)
}

/// `buf[r] ← 0`: the derivative of a memset, and the last step of every region reverse.
pub fn zero_region<A: ShadowMemory + ?Sized>(on: On<'_>, buf: &mut A, r: Pitched) -> Result<()> {
    fill_region(on, buf, r, A::Elem::zero())
}

/// `buf[r] ← value`: the forward of a fill whose value is active (`value` is its tangent).
pub fn fill_region<A: ShadowMemory + ?Sized>(
    on: On<'_>,
    buf: &mut A,
    r: Pitched,
    value: A::Elem,
) -> Result<()> {
    let _p = crate::driver::probe::span("fill_region (zero_region)");
    r.check::<A::Elem>("the destination", buf.len())?;
    if r.elements() == 0 {
        return Ok(());
    }
    if buf.array().is_some() {
        return array::fill(on, buf, r, value);
    }
    let kind = buf.kind();
    match route::<A, A>(on, Op::Zero, &*buf, None)? {
        Route::Host { after } => {
            sync(after.as_deref())?;
            for_each_row_mut(buf, &r, |row| row.fill(value))
        }
        Route::Device { stream } => {
            let mut d = DevMut::of(buf, &stream).ok_or_else(|| no_address(Op::Zero, kind, kind))?;
            boxes::fill(&stream, (&mut d, &r), value)
        }
        Route::Cross(_) => Err(cross_refused(Op::Zero, kind, kind)),
        _ => Err(no_address(Op::Zero, kind, kind)),
    }
}

/// The two-box operations: check both boxes, their shapes and overlap, route, run.
pub(super) fn pair<A, B>(
    on: On<'_>,
    op: Op,
    acc: &mut A,
    ra: Pitched,
    src: Source<'_, B>,
    rb: Pitched,
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let _p = crate::driver::probe::span("region pair (accumulate_and_zero_region)");
    let b = src
        .get()
        .ok_or_else(|| no_address(op, acc.kind(), acc.kind()))?;
    let sa = ra.check::<A::Elem>("the accumulator", acc.len())?;
    let sb = rb.check::<A::Elem>("the source", b.len())?;
    if ra.shape() != rb.shape() {
        return Err(Error::BadRegion {
            what: "the source".into(),
            why: format!(
                "its box is {:?} (width, height, depth) but the accumulator's is {:?}",
                rb.shape(),
                ra.shape()
            ),
        });
    }
    if ra.elements() == 0 {
        return Ok(());
    }
    if acc.array().is_some() || b.array().is_some() {
        return array::pair(on, op, acc, ra, src, rb);
    }
    let size = size_of::<A::Elem>();
    let (acc_kind, src_kind) = (acc.kind(), b.kind());
    let no_address = || no_address(op, acc_kind, src_kind);
    let route = route(on, op, &*acc, Some(b))?;
    // The reverse of a region copy on the device route: the launch judges the two boxes on the
    // views it launches with (a partial overlap refused, the same box left as it is) before it
    // writes, so the buffers' regions are not asked for here: for a cudarc buffer that would cost
    // its event waits a second time, on every call.
    let (route, src) = match (route, src) {
        (Route::Device { stream } | Route::TakePinned { stream }, Source::Take(b)) => {
            let mut b = DevMut::of(b, &stream).ok_or_else(no_address)?;
            let mut a = DevMut::of(acc, &stream).ok_or_else(no_address)?;
            return boxes::accumulate_and_zero(&stream, (&mut a, &ra), (&mut b, &rb));
        }
        other => other,
    };
    let b = src.get().ok_or_else(no_address)?;
    let (ga, gb) = (acc.region(), b.region());
    let same = match relation(&ra, size, (ga.start, sa), (gb.start, sb)) {
        Overlap::Partial => {
            let bytes = |g: Region, s: Strides| Region {
                start: g.start + (s.offset * size) as u64,
                end: g.start + (s.end * size) as u64,
            };
            return Err(Error::partial_overlap(
                op.name(),
                bytes(ga, sa),
                bytes(gb, sb),
            ));
        }
        Overlap::Same => true,
        Overlap::Disjoint => false,
    };
    if same && op == Op::AccumulateAndZero {
        return Ok(());
    }
    let buffers_overlap = ga.relation(gb) != Overlap::Disjoint;
    match route {
        Route::Nothing => Ok(()),
        Route::Host { after } => {
            sync(after.as_deref())?;
            host_pair(acc, &ra, src, &rb, (same, buffers_overlap))
        }
        // The pinned route is planned for whole buffers only; a box keeps the device route.
        Route::Device { stream } | Route::TakePinned { stream } => match src {
            // The same box of the same memory: `acc[ra] += acc[ra]`.
            _ if same => {
                let mut a = DevMut::of(acc, &stream).ok_or_else(no_address)?;
                boxes::double(&stream, (&mut a, &ra))
            }
            Source::Read(b) => {
                let b = DevRef::of(b, &stream).ok_or_else(no_address)?;
                let mut a = DevMut::of(acc, &stream).ok_or_else(no_address)?;
                boxes::accumulate(&stream, (&mut a, &ra), (&b, &rb))
            }
            // Taken above.
            Source::Take(_) | Source::None => Err(no_address()),
        },
        Route::StageIn { stream } => {
            // A device-reachable accumulator, a host-only source: the host packs the source's box
            // into pooled page-locked memory, which the region kernel adds in place. Nothing
            // enqueued here reads the source, so a source to take is zeroed at once after (no
            // wait for the kernel), its read and zeroing both after the stream's earlier work.
            let n = ra.elements();
            if matches!(src, Source::Take(_)) {
                sync(Some(&stream))?;
            }
            let mut packed = Vec::with_capacity(n);
            for_each_row(b, &rb, |row| packed.extend_from_slice(row))?;
            let stage = Lease::pinned_copy_of(&packed, &stream)?;
            {
                let mut a = DevMut::of(acc, &stream).ok_or_else(no_address)?;
                let (w, h, d) = ra.shape();
                let dense = Pitched::slices(0, w, h, d, w * size, h);
                boxes::accumulate(&stream, (&mut a, &ra), (&stage.view(n)?, &dense))?;
            }
            if let Source::Take(b) = src {
                for_each_row_mut(b, &rb, |row| row.fill(A::Elem::zero()))?;
            }
            drop(stage);
            Ok(())
        }
        Route::StageOut { stream } => {
            // A host-only accumulator, a device-reachable source: the source's box is copied
            // packed into pooled pinned memory, added on the host once the stream has reached
            // the copy, then zeroed on the stream.
            {
                let d = DevRef::of(b, &stream).ok_or_else(no_address)?;
                boxes::with_box_on_host(&stream, (&d, &rb), |staged| {
                    let mut k = 0;
                    for_each_row_mut(acc, &ra, |row| {
                        add(row, &staged[k..k + row.len()]);
                        k += row.len();
                    })
                })??;
            }
            if let Source::Take(b) = src {
                let mut d = DevMut::of(b, &stream).ok_or_else(no_address)?;
                boxes::fill(&stream, (&mut d, &rb), A::Elem::zero())?;
            }
            Ok(())
        }
        Route::Cross(_) => Err(cross_refused(op, acc_kind, src_kind)),
    }
}

/// Checks, without writing anything, that the two-box operation between `acc` and `src` (a
/// lane's shadows) has a route: a region operation across contexts is refused, and a rule checks
/// every lane's pair before its first lane runs. Array sides are checked by the array operations.
pub(crate) fn check_pair<A, B>(on: On<'_>, acc: &A, src: &B) -> Result<()>
where
    A: ShadowRead + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    if acc.array().is_some() || src.array().is_some() {
        return Ok(());
    }
    match route(on, Op::AccumulateAndZero, acc, Some(src))? {
        Route::Cross(_) => Err(cross_refused(Op::AccumulateAndZero, acc.kind(), src.kind())),
        _ => Ok(()),
    }
}

/// The route for a region operation, as for whole buffers; across contexts it is refused by the
/// caller.
pub(super) fn route<'s, A, B>(on: On<'s>, op: Op, acc: &A, src: Option<&B>) -> Result<Route<'s>>
where
    A: ShadowRead + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    let a = Operand::of("the accumulator", acc, false);
    let pair;
    let ops: &[Operand<'_>] = match src {
        Some(b) => {
            pair = [a, Operand::of("the source", b, false)];
            &pair
        }
        None => core::slice::from_ref(&a),
    };
    Ok(plan_with(stream_for(on, ops)?, op, ops, acc, src)?.route)
}

pub(super) fn sync(s: Option<&CudaStream>) -> Result<()> {
    match s {
        Some(s) => s
            .synchronize()
            .map_err(driver("cuStreamSynchronize (host region work)")),
        None => Ok(()),
    }
}

pub(super) fn cross_refused(op: Op, dst: MemoryKind, src: MemoryKind) -> Error {
    Error::UnsupportedKinds {
        op: op.name(),
        dst,
        src,
        why: "a region on another device than the stream's is not supported yet: order the work \
              on a stream of the device that holds the boxes",
    }
}

pub(super) fn no_address(op: Op, dst: MemoryKind, src: MemoryKind) -> Error {
    Error::UnsupportedKinds {
        op: op.name(),
        dst,
        src,
        why: "no device address, or device memory without a CUDA stream: name the copy's stream",
    }
}
