//! Shadow work on boxes ([`Pitched`] regions) of a buffer: the operations behind the region rules
//! (pitched copies, memsets, fills). They take the same route as the whole-buffer operations
//! (decided once, in one place: host loops, one stream, staged in or out), and never
//! read or write a byte outside their boxes, padding between rows included.
//!
//! Everything is checked before the first write: each box against its buffer and element type,
//! the shapes against each other, the overlap of the two boxes row interval by row interval.
//!
//! The host loops of the two-box operations are in `host`; the helpers at the end of this file
//! (route, views, errors) are shared with the sums, saves and array operations.

mod host;

use super::host::add;
use super::{On, Op, Operand, Route, Source, plan_with, stream_for};
use crate::cuda::driver;
use crate::device::pool::{Lease, Memory};
use crate::device::region::{self as launch, At, Side};
use crate::element::Differentiable;
use crate::error::{Error, Result};
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
    let src = super::ReadOnly(src);
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
    let s = r.check::<A::Elem>("the destination", buf.len())?;
    if r.elements() == 0 {
        return Ok(());
    }
    if buf.array().is_some() {
        return super::array::fill(on, buf, r, value);
    }
    let kind = buf.kind();
    match route::<A, A>(on, Op::Zero, &*buf, None)? {
        Route::Host { after } => {
            sync(after.as_deref())?;
            let h = host_mut(Op::Zero, buf)?;
            s.each_row(&r, |e| h[e..e + r.width].fill(value));
            Ok(())
        }
        Route::Device { stream } => {
            let d = buf
                .device_mut(&stream)
                .ok_or_else(|| no_address(Op::Zero, kind, kind))?;
            let bytes = value_bytes(&value);
            // SAFETY: the box was checked against the buffer's length; `d` is its device address,
            // ordered on `stream`.
            unsafe {
                launch::fill(
                    &stream,
                    side::<A::Elem>(d.addr(), s),
                    shape(&r),
                    size_of::<A::Elem>(),
                    &bytes,
                )
            }
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
    let b = src.get().expect("a two-box operation has a source");
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
        return super::array::pair(on, op, acc, ra, src, rb);
    }
    let size = size_of::<A::Elem>();
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
    // Buffers that share memory (two raw views of one allocation) never have host views alive at
    // the same time: see `host_pair`.
    let buffers_overlap = ga.relation(gb) != Overlap::Disjoint;
    let (acc_kind, src_kind) = (acc.kind(), b.kind());
    let shape3 = shape(&ra);
    let size_el = size;
    match route(on, op, &*acc, Some(b))? {
        Route::Nothing => Ok(()),
        Route::Host { after } => {
            sync(after.as_deref())?;
            host_pair(op, acc, sa, src, sb, &ra, same, buffers_overlap)
        }
        // The pinned route is planned for whole buffers only; a box keeps the device route.
        Route::Device { stream } | Route::TakePinned { stream } => {
            let mut src = src;
            let pb = match &mut src {
                Source::Read(b) => b.device(&stream).map(|d| d.addr()),
                Source::Take(b) => b.device_mut(&stream).map(|d| d.addr()),
                Source::None => None,
            }
            .ok_or_else(|| no_address(op, acc_kind, src_kind))?;
            let a = acc
                .device_mut(&stream)
                .ok_or_else(|| no_address(op, acc_kind, src_kind))?;
            let pa = a.addr();
            let pb = if same { pa } else { pb };
            // SAFETY: both boxes were checked against their buffers; they are disjoint row by
            // row, or the same box (each element read before it is written by one thread).
            unsafe {
                launch::accumulate(
                    &stream,
                    A::Elem::DTYPE,
                    side::<A::Elem>(pa, sa),
                    side::<A::Elem>(pb, sb),
                    shape3,
                    op == Op::AccumulateAndZero,
                )
            }
        }
        Route::StageIn { stream } => {
            // A device-reachable accumulator, a host-only source: the host packs the source's box
            // into pooled page-locked memory (nothing reads the borrowed source once this
            // returns), the region kernel adds it in place, then the host zeroes the source's box
            // once the stream is done with it.
            let n = ra.elements();
            let stage = {
                let h = host_of(op, b)?;
                let mut packed = Vec::with_capacity(n);
                sb.each_row(&rb, |e| packed.extend_from_slice(&h[e..e + rb.width]));
                Lease::pinned_copy_of(&packed, &stream)?
            };
            {
                let a = acc
                    .device_mut(&stream)
                    .ok_or_else(|| no_address(op, acc_kind, src_kind))?;
                let packed = Side {
                    addr: stage.ptr(),
                    row: shape3.0,
                    slice: shape3.0 * shape3.1,
                };
                // SAFETY: the accumulator's box was checked; the staged box is packed, `n`
                // elements of page-locked memory reachable by kernels at its host address.
                unsafe {
                    launch::accumulate(
                        &stream,
                        A::Elem::DTYPE,
                        side::<A::Elem>(a.addr(), sa),
                        packed,
                        shape3,
                        false,
                    )?
                };
            }
            if let Source::Take(b) = src {
                sync(Some(&stream))?;
                let h = host_mut(op, b)?;
                sb.each_row(&rb, |e| h[e..e + rb.width].fill(A::Elem::zero()));
            }
            drop(stage);
            Ok(())
        }
        Route::StageOut { stream } => {
            // A host-only accumulator, a device-reachable source: stage the source's box packed
            // into pooled pinned memory, add it on the host, then zero the source's box on the
            // stream.
            let n = ra.elements();
            let stage = Lease::new(Memory::PinnedHost, n * size_el, &stream, &stream)?;
            let mut src = src;
            {
                let pb = match &mut src {
                    Source::Read(b) => b.device(&stream),
                    Source::Take(b) => b.device_mut(&stream),
                    Source::None => None,
                }
                .ok_or_else(|| no_address(op, acc_kind, src_kind))?;
                // SAFETY: the source's box was checked; the lease holds `n` elements.
                unsafe {
                    launch::copy_box(
                        &stream,
                        size_el,
                        (At::Host(stage.ptr()), shape3.0, shape3.0 * shape3.1),
                        (
                            At::Unified(pb.addr() + (sb.offset * size_el) as u64),
                            sb.row as u64,
                            sb.slice as u64,
                        ),
                        shape3,
                    )?
                };
            }
            sync(Some(&stream))?;
            {
                let a = host_mut(op, acc)?;
                // SAFETY: the stream is synchronised: the pinned lease holds the `n` packed source
                // elements, aligned for every element type (page-aligned).
                let staged =
                    unsafe { core::slice::from_raw_parts(stage.ptr() as *const A::Elem, n) };
                let mut k = 0;
                sa.each_row(&ra, |e| {
                    add(&mut a[e..e + ra.width], &staged[k..k + ra.width]);
                    k += ra.width;
                });
            }
            if let Source::Take(b) = src {
                let d = b
                    .device_mut(&stream)
                    .ok_or_else(|| no_address(op, acc_kind, src_kind))?;
                let zero = value_bytes(&A::Elem::zero());
                // SAFETY: the source's box was checked; ordered on the stream after the copy.
                unsafe {
                    launch::fill(
                        &stream,
                        side::<A::Elem>(d.addr(), sb),
                        shape3,
                        size_el,
                        &zero,
                    )?
                };
            }
            drop(stage);
            Ok(())
        }
        Route::Cross(_) => Err(cross_refused(op, acc_kind, src_kind)),
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

pub(super) fn side<T>(addr: u64, s: Strides) -> Side {
    Side {
        addr: addr + (s.offset * size_of::<T>()) as u64,
        row: s.row as u64,
        slice: s.slice as u64,
    }
}

pub(super) fn shape(r: &Pitched) -> launch::Shape {
    (r.width as u64, r.height as u64, r.depth as u64)
}

/// The bytes of one element (the fill kernels take the value as bytes).
pub(super) fn value_bytes<T: Differentiable>(v: &T) -> Vec<u8> {
    // SAFETY: every `Differentiable` type is plain old data (floats and pairs of floats).
    unsafe { core::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }.to_vec()
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

/// The whole host view of `m` (boxes are checked against its length), as the whole-buffer host
/// routes take it.
pub(super) fn host_of<M: ShadowRead + ?Sized>(op: Op, m: &M) -> Result<&[M::Elem]> {
    super::host::host_of(op, m, m.len())
}

/// As [`host_of`], writable.
pub(super) fn host_mut<M: ShadowMemory + ?Sized>(op: Op, m: &mut M) -> Result<&mut [M::Elem]> {
    let len = m.len();
    super::host::host_of_mut(op, m, len)
}
