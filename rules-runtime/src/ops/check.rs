//! The checked mode's compare: does a box of a buffer hold what a rule assumes its primitive
//! wrote (a copy of a source box, one repeated bit pattern, a value)? Routed as the region
//! operations are (`region::route`, decided once): host memory compared by the host after the
//! stream's work, device-reachable memory by a kernel on the stream (`device::check`), a pair of
//! a host and a device box by the host, the device box copied over packed; a CUDA array's box is
//! staged into pooled linear memory first. Nothing is written to the caller's memory; the host
//! waits for the copy's stream, so a capturing stream is refused.

use super::region::{no_address, route, sync};
use super::{On, Op, Route, capturing};
use crate::device::check::{self as device, Against, SLOTS};
use crate::device::region as boxes;
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::ShadowRead;
use crate::memory::rows::for_each_row;
use crate::memory::view::DevRef;
use crate::region::Pitched;
use cudarc::driver::CudaStream;

pub(crate) use crate::device::check::Found;

/// What a box is expected to hold.
pub(crate) enum Expect<'b, B: ?Sized, T> {
    /// The same elements as this box of `B` (a copy).
    Copy(&'b B, Pitched),
    /// One bit pattern: every element as the box's first (a memset).
    Repeat,
    /// This value everywhere (a fill by value).
    Value(T),
    /// The one element of this box of `B` everywhere (a fill from a one-element buffer).
    ValueIn(&'b B, Pitched),
}

/// What [`Error::Capturing`] names.
pub(crate) const CAPTURE: &str =
    "the checked mode's compare (it waits for the copy's stream to read what the primitive wrote)";

/// Compares `dst[r]` with what `expect` says, bitwise. `Ok(None)`: it agrees (or the check
/// cannot be made: a box on another context than the stream's, see docs/checked.md).
pub(crate) fn compare<A, B>(
    on: On<'_>,
    dst: &A,
    r: Pitched,
    expect: Expect<'_, B, A::Elem>,
) -> Result<Option<Found>>
where
    A: ShadowRead + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    r.check::<A::Elem>("the checked box", dst.len())?;
    // The boxes come from the buffers as they are after the call: a primitive that resized its
    // destination (a `Vec` it grew) has changed the shape the rule planned for.
    if let Expect::Copy(b, rb) | Expect::ValueIn(b, rb) = &expect {
        rb.check::<A::Elem>("the checked source box", b.len())?;
        if matches!(expect, Expect::Copy(..)) && rb.elements() != r.elements() {
            return Err(Error::LengthMismatch {
                what: "the destination after the primitive ran (it changed the destination's length: a primitive that resizes its buffers is not a copy)".into(),
                expected: rb.elements(),
                found: r.elements(),
            });
        }
    }
    if r.elements() == 0 {
        return Ok(None);
    }
    // A value held in a buffer: read once, then compared as a fill by value.
    if let Expect::ValueIn(b, rb) = expect {
        let v = value_of(on, b, rb)?;
        return compare::<A, B>(on, dst, r, Expect::Value(v));
    }
    // CUDA arrays have no address: their boxes are compared from pooled linear copies.
    if dst.array().is_some() {
        let s = super::region::array::stream(on, "a CUDA array")?;
        let (st, at) = super::region::array::staged(s, dst, r)?;
        return compare(On::Stream(s), &st, at, expect);
    }
    if let Expect::Copy(b, rb) = expect
        && b.array().is_some()
    {
        let s = super::region::array::stream(on, "a CUDA array")?;
        let (st, at) = super::region::array::staged(s, b, rb)?;
        return compare(On::Stream(s), dst, r, Expect::Copy(&st, at));
    }
    let src = match expect {
        Expect::Copy(b, _) => Some(b),
        _ => None,
    };
    let kind = dst.kind();
    let found = match route::<A, B>(on, Op::Accumulate, dst, src)? {
        // Another context's memory: the check is not made (docs/checked.md).
        Route::Nothing | Route::Cross(_) => return Ok(None),
        Route::Host { after } => {
            sync(after.as_deref())?;
            let got = packed_host(dst, &r)?;
            match expect {
                Expect::Copy(b, rb) => {
                    let want = packed_host(b, &rb)?;
                    diff(&got, |i| want[i])
                }
                Expect::Repeat => diff(&got, |_| got[0]),
                Expect::Value(v) => diff(&got, |_| v),
                Expect::ValueIn(..) => return Ok(None), // read above
            }
        }
        Route::Device { stream } | Route::TakePinned { stream } => {
            if capturing(&stream)? {
                return Err(Error::Capturing { op: CAPTURE });
            }
            let no = |k| no_address(Op::Accumulate, kind, k);
            let d = DevRef::of(dst, &stream).ok_or_else(|| no(kind))?;
            match expect {
                Expect::Copy(b, rb) => {
                    let s = DevRef::of(b, &stream).ok_or_else(|| no(b.kind()))?;
                    device::compare(&stream, (&d, &r), Against::Box(&s, &rb))?
                }
                Expect::Repeat => device::compare(&stream, (&d, &r), Against::First)?,
                Expect::Value(v) => device::compare(&stream, (&d, &r), Against::Value(v))?,
                Expect::ValueIn(..) => return Ok(None), // read above
            }
        }
        // One side in host memory, the other device-reachable (an upload or a download): both
        // boxes compared by the host, the device one copied over packed.
        Route::StageIn { stream } | Route::StageOut { stream } => {
            let got = staged_or_host(&stream, dst, &r)?;
            match expect {
                Expect::Copy(b, rb) => {
                    let want = staged_or_host(&stream, b, &rb)?;
                    diff(&got, |i| want[i])
                }
                _ => return Ok(None), // a box alone is never staged
            }
        }
    };
    Ok((found.count > 0).then_some(found))
}

/// The box `r` of `buf` packed, read by the host once the stream is done with it: the box of
/// host memory by the host, of device-reachable memory through pooled pinned memory.
fn staged_or_host<B: ShadowRead + ?Sized>(
    stream: &CudaStream,
    buf: &B,
    r: &Pitched,
) -> Result<Vec<B::Elem>> {
    if buf.kind().device_accessible() {
        let kind = buf.kind();
        let d = DevRef::of(buf, stream).ok_or_else(|| no_address(Op::Accumulate, kind, kind))?;
        boxes::with_box_on_host(stream, (&d, r), <[B::Elem]>::to_vec)
    } else {
        sync(Some(stream))?;
        packed_host(buf, r)
    }
}

/// The one element at `r`'s start in `buf` (a fill's value held in a buffer).
pub(crate) fn value_of<B: ShadowRead + ?Sized>(on: On<'_>, buf: &B, r: Pitched) -> Result<B::Elem> {
    packed(on, buf, Pitched::linear::<B::Elem>(r.offset, 1))?
        .first()
        .copied()
        .ok_or_else(|| Error::BadRegion {
            what: "the fill's value".into(),
            why: "it holds no element".into(),
        })
}

/// The box `r` of `buf` (on the route's side of the host) packed.
fn packed<B: ShadowRead + ?Sized>(on: On<'_>, buf: &B, r: Pitched) -> Result<Vec<B::Elem>> {
    let kind = buf.kind();
    match route::<B, B>(on, Op::Accumulate, buf, None)? {
        Route::Device { stream } | Route::TakePinned { stream } => {
            if capturing(&stream)? {
                return Err(Error::Capturing { op: CAPTURE });
            }
            let d =
                DevRef::of(buf, &stream).ok_or_else(|| no_address(Op::Accumulate, kind, kind))?;
            boxes::with_box_on_host(&stream, (&d, &r), <[B::Elem]>::to_vec)
        }
        Route::Host { after } => {
            sync(after.as_deref())?;
            packed_host(buf, &r)
        }
        _ => Err(no_address(Op::Accumulate, kind, kind)),
    }
}

/// The box `r` of host memory `buf`, packed by the host.
fn packed_host<B: ShadowRead + ?Sized>(buf: &B, r: &Pitched) -> Result<Vec<B::Elem>> {
    let mut v = Vec::with_capacity(r.elements());
    for_each_row(buf, r, |row| v.extend_from_slice(row))?;
    Ok(v)
}

/// The elements of `got` whose bits differ from `want(i)`'s: their count and the first few.
fn diff<T: Differentiable>(got: &[T], want: impl Fn(usize) -> T) -> Found {
    let mut found = Found::default();
    for (i, g) in got.iter().enumerate() {
        if g.__bits() != want(i).__bits() {
            found.count += 1;
            if found.first.len() < SLOTS {
                found.first.push(i as u64);
            }
        }
    }
    found
}
