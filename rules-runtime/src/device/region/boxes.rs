//! The safe face of the box launches: every function takes checked views
//! ([`DevRef`], [`DevMut`], checked array boxes [`Place`]) and the boxes in them, checks each box
//! against its view's length (and the two boxes' shapes and overlap), and only then launches. What
//! a launch uses is what it checked.

use super::{
    At, Shape, Side, SumTo, SurfaceOp, array_box, copy_box, launch_accumulate, launch_fill,
};
use super::{sum as launch_sum, sum_partials};
use crate::driver::driver;
use crate::driver::pool::{self, Lease, Memory};
use crate::element::Differentiable;
use crate::error::{Error, Result, check_len};
use crate::memory::array::Place;
use crate::memory::view::{DevMut, DevRef};
use crate::memory::{Overlap, Region};
use crate::region::{Pitched, Strides, relation};
use cudarc::driver::CudaStream;

/// The launch side of a checked box at device address `addr`.
fn side<T>(addr: u64, s: Strides) -> Side {
    Side {
        addr: addr + (s.offset * size_of::<T>()) as u64,
        row: s.row as u64,
        slice: s.slice as u64,
    }
}

/// The box's shape as the launches take it.
pub(crate) fn shape(r: &Pitched) -> Shape {
    (r.width as u64, r.height as u64, r.depth as u64)
}

fn same_shape(a: &Pitched, b: &Pitched) -> Result<()> {
    if a.shape() == b.shape() {
        Ok(())
    } else {
        Err(Error::BadRegion {
            what: "the source".into(),
            why: format!(
                "its box is {:?} (width, height, depth) but the accumulator's is {:?}",
                b.shape(),
                a.shape()
            ),
        })
    }
}

/// How two checked boxes of one shape relate; a partial overlap is an error.
fn judge<T>(what: &str, r: &Pitched, a: (u64, Strides), b: (u64, Strides)) -> Result<Overlap> {
    let size = size_of::<T>();
    match relation(r, size, a, b) {
        Overlap::Partial => {
            let bytes = |(base, s): (u64, Strides)| Region {
                start: base + (s.offset * size) as u64,
                end: base + (s.end * size) as u64,
            };
            Err(Error::partial_overlap(what, bytes(a), bytes(b)))
        }
        o => Ok(o),
    }
}

/// `acc[ra] += src[rb]` on `stream`: boxes of one shape, disjoint row by row or the same box of
/// the same memory (which doubles).
pub(crate) fn accumulate<T: Differentiable>(
    stream: &CudaStream,
    (acc, ra): (&mut DevMut<'_, T>, &Pitched),
    (src, rb): (&DevRef<'_, T>, &Pitched),
) -> Result<()> {
    same_shape(ra, rb)?;
    let sa = ra.check::<T>("the accumulator", acc.len())?;
    let sb = rb.check::<T>("the source", src.len())?;
    judge::<T>("accumulate_region", ra, (acc.addr(), sa), (src.addr(), sb))?;
    // SAFETY: both boxes lie in their views (checked), which are device-reachable memory ordered
    // on `stream`; they are disjoint row by row, or the same box (each element read before it is
    // written, by one thread).
    unsafe {
        launch_accumulate(
            stream,
            T::DTYPE,
            side::<T>(acc.addr(), sa),
            side::<T>(src.addr(), sb),
            shape(ra),
            false,
        )
    }
}

/// `acc[r] += acc[r]` on `stream` (the accumulation of a box into itself).
pub(crate) fn double<T: Differentiable>(
    stream: &CudaStream,
    (acc, r): (&mut DevMut<'_, T>, &Pitched),
) -> Result<()> {
    let s = r.check::<T>("the accumulator", acc.len())?;
    let a = side::<T>(acc.addr(), s);
    // SAFETY: the box lies in the view (checked), device-reachable memory ordered on `stream`;
    // each element is read before it is written, by one thread.
    unsafe { launch_accumulate(stream, T::DTYPE, a, a, shape(r), false) }
}

/// The box `src[r]`, copied packed on `stream` into pooled page-locked memory and handed to `f`
/// on the host once the stream has reached the copy (the host waits).
pub(crate) fn with_box_on_host<T: Differentiable, R>(
    stream: &CudaStream,
    (src, r): (&DevRef<'_, T>, &Pitched),
    f: impl FnOnce(&[T]) -> R,
) -> Result<R> {
    let s = r.check::<T>("the source", src.len())?;
    let n = r.elements();
    let (w, h, _) = r.shape();
    let stage = Lease::new(Memory::PinnedHost, n * size_of::<T>(), stream, stream)?;
    // SAFETY: the box lies in the view (checked); the lease holds `n` elements of pinned memory,
    // written packed; the host reads it only after the stream is synchronised below.
    unsafe {
        copy_box(
            stream,
            size_of::<T>(),
            (At::Host(stage.ptr()), w as u64, (w * h) as u64),
            (
                At::Unified(src.addr() + (s.offset * size_of::<T>()) as u64),
                s.row as u64,
                s.slice as u64,
            ),
            shape(r),
        )?
    };
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize (device to host region)"))?;
    // SAFETY: the stream is synchronised: the pinned lease holds the `n` packed elements, aligned
    // for every element type (page-aligned), and no device work touches it until it drops.
    let staged = unsafe { core::slice::from_raw_parts(stage.ptr() as *const T, n) };
    Ok(f(staged))
}

/// `acc[ra] += src[rb]; src[rb] ← 0` in one pass on `stream`: boxes of one shape, disjoint row by
/// row; the same box of the same memory is the identity (nothing is launched).
pub(crate) fn accumulate_and_zero<T: Differentiable>(
    stream: &CudaStream,
    (acc, ra): (&mut DevMut<'_, T>, &Pitched),
    (src, rb): (&mut DevMut<'_, T>, &Pitched),
) -> Result<()> {
    same_shape(ra, rb)?;
    let sa = ra.check::<T>("the accumulator", acc.len())?;
    let sb = rb.check::<T>("the source", src.len())?;
    let how = judge::<T>(
        "accumulate_and_zero_region",
        ra,
        (acc.addr(), sa),
        (src.addr(), sb),
    )?;
    if how == Overlap::Same {
        return Ok(());
    }
    // SAFETY: both boxes lie in their views (checked), device-reachable memory ordered on
    // `stream`, disjoint row by row (checked).
    unsafe {
        launch_accumulate(
            stream,
            T::DTYPE,
            side::<T>(acc.addr(), sa),
            side::<T>(src.addr(), sb),
            shape(ra),
            true,
        )
    }
}

/// `dst[r] ← value` on `stream`.
pub(crate) fn fill<T: Differentiable>(
    stream: &CudaStream,
    (dst, r): (&mut DevMut<'_, T>, &Pitched),
    value: T,
) -> Result<()> {
    let s = r.check::<T>("the destination", dst.len())?;
    // SAFETY: every `Differentiable` type is plain old data (floats and pairs of floats).
    let bytes =
        unsafe { core::slice::from_raw_parts((&raw const value).cast::<u8>(), size_of::<T>()) };
    // SAFETY: the box lies in the view (checked), device-reachable memory ordered on `stream`.
    unsafe {
        launch_fill(
            stream,
            side::<T>(dst.addr(), s),
            shape(r),
            size_of::<T>(),
            bytes,
        )
    }
}

/// The deterministic sum of `src[r]`, per component in `f64`, read on the host once `stream` has
/// finished (the host waits).
pub(crate) fn sum_to_host<T: Differentiable>(
    stream: &CudaStream,
    (src, r): (&DevRef<'_, T>, &Pitched),
) -> Result<[f64; 2]> {
    let s = r.check::<T>("the summed buffer", src.len())?;
    let parts = sum_partials(T::DTYPE, side::<T>(src.addr(), s), shape(r)).max(1);
    let partials = Lease::new(Memory::Device, parts * 8, stream, stream)?;
    let out = Lease::new(Memory::PinnedHost, 16, stream, stream)?;
    // SAFETY: the box lies in the view (checked); the leases hold the partials and two doubles,
    // device-reachable and ours while leased.
    unsafe {
        launch_sum(
            stream,
            T::DTYPE,
            side::<T>(src.addr(), s),
            shape(r),
            partials.ptr(),
            SumTo::F64(out.ptr()),
        )?
    };
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize (region sum)"))?;
    // SAFETY: pinned memory of 16 bytes (aligned), written by the finished kernel, not in use.
    let got = unsafe { core::slice::from_raw_parts(out.ptr() as *const f64, 2) };
    Ok([got[0], got[1]])
}

/// `acc[0] += Σ src[r]` on `stream`, rounded once to `T`, without a host wait. `acc` holds one
/// element, not in the box.
pub(crate) fn sum_into<T: Differentiable>(
    stream: &CudaStream,
    (src, r): (&DevRef<'_, T>, &Pitched),
    acc: &mut DevMut<'_, T>,
) -> Result<()> {
    check_len("the value's shadow (one element)", 1, acc.len())?;
    let s = r.check::<T>("the summed buffer", src.len())?;
    if r.elements() > 0 {
        let boxed = Region {
            start: src.addr() + (s.offset * size_of::<T>()) as u64,
            end: src.addr() + (s.end * size_of::<T>()) as u64,
        };
        if acc.region().relation(boxed) != Overlap::Disjoint {
            return Err(Error::Aliasing {
                what: "the value's shadow".into(),
                other: "the summed box".into(),
                start: acc.region().start.max(boxed.start),
                end: acc.region().end.min(boxed.end),
            });
        }
    }
    let parts = sum_partials(T::DTYPE, side::<T>(src.addr(), s), shape(r)).max(1);
    let partials = Lease::new(Memory::Device, parts * 8, stream, stream)?;
    // SAFETY: the box lies in the view (checked); `acc` holds one element outside it (checked);
    // the lease holds the partials.
    unsafe {
        launch_sum(
            stream,
            T::DTYPE,
            side::<T>(src.addr(), s),
            shape(r),
            partials.ptr(),
            SumTo::AddInto(acc.addr()),
        )
    }
}

/// One side of a box copy.
pub(crate) enum BoxOf<'r, 'v, T> {
    /// A box of device-reachable memory.
    Dev(&'r DevRef<'v, T>, &'r Pitched),
    /// A checked box of a CUDA array.
    Array(Place<'r>),
}

/// The destination of a box copy.
pub(crate) enum BoxInto<'r, 'v, T> {
    /// A box of device-reachable memory.
    Dev(&'r mut DevMut<'v, T>, &'r Pitched),
    /// A checked box of a CUDA array.
    Array(Place<'r>),
}

/// `dst ← src` for two boxes of `shape` (`cuMemcpy3DAsync`) on `stream`. Each linear box is
/// checked against its view; an array box was checked when placed, and must hold elements of
/// `T`'s size. The two sides must not overlap (a copy within one view is refused).
pub(crate) fn copy<T>(
    stream: &CudaStream,
    dst: BoxInto<'_, '_, T>,
    src: BoxOf<'_, '_, T>,
    (w, h, d): (usize, usize, usize),
) -> Result<()> {
    let size = size_of::<T>();
    let bad = |what: &str, why: String| Error::BadRegion {
        what: what.to_string(),
        why,
    };
    let expect = |what: &str, r: &Pitched| {
        if r.shape() == (w, h, d) {
            Ok(())
        } else {
            Err(bad(
                what,
                format!("its box is {:?}, the copy's {:?}", r.shape(), (w, h, d)),
            ))
        }
    };
    let array = |what: &str, p: &Place<'_>| {
        if p.size() == size && p.shape() == (w, h, d) {
            Ok(())
        } else {
            Err(bad(
                what,
                "the array box does not match the copy's element size and shape".into(),
            ))
        }
    };
    let (d_at, d_bytes) = match &dst {
        BoxInto::Dev(v, r) => {
            expect("the destination", r)?;
            let s = r.check::<T>("the destination", v.len())?;
            (
                (
                    At::Unified(v.addr() + (s.offset * size) as u64),
                    s.row as u64,
                    s.slice as u64,
                ),
                Some(v.region()),
            )
        }
        BoxInto::Array(p) => {
            array("the destination", p)?;
            (p.at(), None)
        }
    };
    let (s_at, s_bytes) = match &src {
        BoxOf::Dev(v, r) => {
            expect("the source", r)?;
            let s = r.check::<T>("the source", v.len())?;
            (
                (
                    At::Unified(v.addr() + (s.offset * size) as u64),
                    s.row as u64,
                    s.slice as u64,
                ),
                Some(v.region()),
            )
        }
        BoxOf::Array(p) => {
            array("the source", p)?;
            (p.at(), None)
        }
    };
    if let (Some(a), Some(b)) = (d_bytes, s_bytes)
        && a.relation(b) != Overlap::Disjoint
    {
        return Err(Error::partial_overlap("a box copy", a, b));
    }
    if let (BoxInto::Array(a), BoxOf::Array(b)) = (&dst, &src)
        && a.same_array(b)
    {
        return Err(bad(
            "a box copy",
            "both sides are boxes of one CUDA array".into(),
        ));
    }
    // SAFETY: each side is a box checked against its view or array, of `shape` elements of `T`'s
    // size, not overlapping the other.
    unsafe { copy_box(stream, size, d_at, s_at, (w as u64, h as u64, d as u64)) }
}

/// `array[box] ← 0` on `stream`: the surface-store kernel, or, for an array without a surface
/// object (or a box past the kernel's 32-bit coordinates), a copy from the pool's zero buffer.
pub(crate) fn zero_array(stream: &CudaStream, p: Place<'_>) -> Result<()> {
    let (w, h, d) = p.shape();
    let size = p.size();
    let shape3 = (w as u64, h as u64, d as u64);
    match p.surface() {
        // SAFETY: the surface is the array's own, and the box was checked against it by `place`
        // (and fits the kernel's coordinates).
        Some(b) => unsafe { array_box(stream, b, size, shape3, SurfaceOp::Zero) },
        None => {
            let z = pool::zeros(stream, w * h * d * size)?;
            // SAFETY: the zero buffer holds the box's elements and is never written; the array
            // box was checked by `place`.
            unsafe {
                copy_box(
                    stream,
                    size,
                    p.at(),
                    (At::Unified(z), w as u64, (w * h) as u64),
                    shape3,
                )
            }
        }
    }
}

/// What [`array_pass`] does: the mode of `array_pass_*` in `shadow.cu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// `lin += array`.
    IntoLinear,
    /// `lin += array; array ← 0`.
    TakeIntoLinear,
    /// `array += lin`.
    IntoArray,
    /// `array += lin; lin ← 0`.
    TakeIntoArray,
}

/// Whether [`array_pass`] can run on this array box: the array has a surface the box fits.
pub(crate) fn can_pass(p: &Place<'_>) -> bool {
    p.surface().is_some()
}

/// One pass through the array's surface between its box and the box `r` of device memory `lin`:
/// see [`Pass`]. The array box must have a surface ([`can_pass`]) and hold elements of `T`.
pub(crate) fn array_pass<T: Differentiable>(
    stream: &CudaStream,
    p: Place<'_>,
    (lin, r): (&mut DevMut<'_, T>, &Pitched),
    pass: Pass,
) -> Result<()> {
    pass_on::<T>(stream, p, (lin.addr(), lin.len(), r), pass)
}

/// `array[box] += lin[r]`, the linear box only read: [`array_pass`] with [`Pass::IntoArray`].
pub(crate) fn array_pass_read<T: Differentiable>(
    stream: &CudaStream,
    p: Place<'_>,
    (lin, r): (&DevRef<'_, T>, &Pitched),
) -> Result<()> {
    pass_on::<T>(stream, p, (lin.addr(), lin.len(), r), Pass::IntoArray)
}

/// [`array_pass`] on the linear view's address and length (of a [`DevMut`], or of a [`DevRef`]
/// for [`Pass::IntoArray`], which only reads it).
fn pass_on<T: Differentiable>(
    stream: &CudaStream,
    p: Place<'_>,
    (addr, len, r): (u64, usize, &Pitched),
    pass: Pass,
) -> Result<()> {
    let s = r.check::<T>("the linear box", len)?;
    if p.size() != size_of::<T>() || p.shape() != r.shape() {
        return Err(Error::BadRegion {
            what: "the linear box".into(),
            why: format!(
                "its box is {:?} but the array box's is {:?}",
                r.shape(),
                p.shape()
            ),
        });
    }
    let Some(b) = p.surface() else {
        return Err(Error::UnsupportedKinds {
            op: "array pass",
            dst: crate::memory::MemoryKind::Array,
            src: crate::memory::MemoryKind::Device,
            why: "the array has no surface object",
        });
    };
    let mode = match pass {
        Pass::IntoLinear => 0,
        Pass::TakeIntoLinear => 1,
        Pass::IntoArray => 2,
        Pass::TakeIntoArray => 3,
    };
    let op = SurfaceOp::Pass {
        dtype: T::DTYPE,
        lin: side::<T>(addr, s),
        mode,
    };
    // SAFETY: the array box was checked by `place` and fits the kernel's coordinates (`surface`);
    // the linear box lies in its view (checked), device memory ordered on `stream`, which never
    // overlaps an array.
    unsafe { array_box(stream, b, size_of::<T>(), shape(r), op) }
}
