//! Region operations with CUDA array memory on either side. An array has no address; the kernels
//! reach it through its surface object.
//! - Array and device memory of the stream's context: one kernel (`array_pass_*`) reads the array
//!   box through the surface, adds, and writes the sum and the zeros where they go.
//! - Otherwise (host, pinned or unified memory, another array, an array without a surface): the
//!   array box is copied into pooled linear device memory (`cuMemcpy3DAsync`), the linear
//!   operation runs there (the strided kernels, or the host routes for host memory on the other
//!   side), an accumulator's box is copied back, and a source's box is zeroed by a kernel of
//!   surface stores (memset is invalid on arrays), or by a copy from the pool's zero buffer for an
//!   array without a surface.
//!
//! Everything is ordered on the copy's stream; nothing waits on the host beyond what the linear
//! route does.

use super::region::pair as linear_pair;
use super::{On, Op, Source};
use crate::device::pool::{self, Lease, Memory};
use crate::device::region::{At, Shape, SurfaceBox, SurfaceOp, array_box, copy_box};
use crate::error::{Error, Result};
use crate::memory::array::ArrayRef;
use crate::memory::raw::RawShadow;
use crate::memory::{MemoryKind, Overlap, ShadowMemory, ShadowRead};
use crate::region::{Pitched, relation};
use cudarc::driver::CudaStream;

/// A checked array box: the array (its handle, surface object and dimensionality) and the
/// element its box starts at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place {
    handle: cudarc::driver::sys::CUarray,
    surface: Option<cudarc::driver::sys::CUsurfObject>,
    dims: u32,
    x: usize,
    y: usize,
    z: usize,
}

impl Place {
    /// This side of a box copy.
    pub(crate) fn at(self) -> (At, u64, u64) {
        let Place {
            handle, x, y, z, ..
        } = self;
        (At::Array { handle, x, y, z }, 0, 0)
    }
}

impl Place {
    /// The box's surface side, if the array has a surface and the box's coordinates fit the
    /// kernels' 32-bit ones.
    fn surface(self, (w, h, d): Shape, size: usize) -> Option<SurfaceBox> {
        let fits = |v: u64| i32::try_from(v).is_ok();
        let fit = fits((self.x as u64 + w) * size as u64)
            && fits(self.y as u64 + h)
            && fits(self.z as u64 + d);
        Some(SurfaceBox {
            surface: self.surface.filter(|_| fit)?,
            dims: self.dims,
            x: self.x,
            y: self.y,
            z: self.z,
        })
    }
}

/// `array[box] ← 0` on `s`, for a box of `shape` elements of `size` bytes checked by [`place`]:
/// the surface-store kernel, or, for an array without a surface object, a copy from the pool's
/// zero buffer (a few times slower: docs/arrays.md).
fn zero_box(s: &CudaStream, p: Place, size: usize, shape: Shape) -> Result<()> {
    let (w, h, d) = shape;
    match p.surface(shape, size) {
        // SAFETY: the surface is the array's own, and `place` checked the box against it.
        Some(b) => unsafe { array_box(s, b, size, shape, SurfaceOp::Zero) },
        None => {
            let z = pool::zeros(s, (w * h * d) as usize * size)?;
            // SAFETY: the zero buffer holds the box's elements and is never written.
            unsafe { copy_box(s, size, p.at(), (At::Unified(z), w, w * h), shape) }
        }
    }
}

/// Whether the reverse can run in one pass through the array's surface (`array_pass`): the array
/// has a surface the box fits, and the linear side (its kind, whether its context is the
/// stream's or unnamed, its length) is device memory of the stream's context. Then the surface
/// side, and the linear box's strides, checked against its buffer.
fn direct<T: crate::element::Differentiable>(
    p: Place,
    r: &Pitched,
    (kind, same_context, len): (MemoryKind, bool, usize),
) -> Result<Option<(SurfaceBox, crate::region::Strides)>> {
    let shape = (r.width as u64, r.height as u64, r.depth as u64);
    match p.surface(shape, size_of::<T>()) {
        Some(b) if kind == MemoryKind::Device && same_context => {
            Ok(Some((b, r.check::<T>("the linear box", len)?)))
        }
        _ => Ok(None),
    }
}

/// Runs `array_pass` with `mode` (see [`SurfaceOp::Pass`]) on a plan of [`direct`], the linear
/// box's elements at device address `addr`.
///
/// # Safety
/// `addr` is the linear buffer's device address, ordered on `s`, held for the call.
unsafe fn pass<T: crate::element::Differentiable>(
    s: &CudaStream,
    (b, strides): (SurfaceBox, crate::region::Strides),
    r: &Pitched,
    addr: u64,
    mode: u32,
) -> Result<()> {
    let shape = (r.width as u64, r.height as u64, r.depth as u64);
    let lin = super::region::side::<T>(addr, strides);
    let op = SurfaceOp::Pass {
        dtype: T::DTYPE,
        lin,
        mode,
    };
    // SAFETY: the array box was checked by `place` and fits the kernel's coordinates (`direct`);
    // the linear box was checked against its buffer, device memory at `addr` ordered on `s`,
    // which never overlaps an array.
    unsafe { array_box(s, b, size_of::<T>(), shape, op) }
}

/// Where box `r` of array `a` starts. The box must use the array's own layout (pitch
/// `width · size`, slice height `height`) and not cross the end of a row, a slice or the array.
pub(crate) fn place(a: &ArrayRef<'_>, r: &Pitched, what: &str) -> Result<Place> {
    let (w, h, d) = a.extent;
    let bad = |why: String| Error::BadRegion {
        what: what.to_string(),
        why,
    };
    if (r.height > 1 || r.depth > 1) && r.pitch != w * a.size {
        return Err(bad(format!(
            "a box of a CUDA array has the array's pitch ({} bytes), not {}",
            w * a.size,
            r.pitch
        )));
    }
    if r.depth > 1 && r.slice_height != h {
        return Err(bad(format!(
            "a box of a CUDA array has the array's slice height ({h} rows), not {}",
            r.slice_height
        )));
    }
    let (x, y, z) = (r.offset % w, (r.offset / w) % h, r.offset / (w * h));
    let fits = |o: usize, n: usize, m: usize| o.checked_add(n).is_some_and(|e| e <= m);
    if !(fits(x, r.width, w) && fits(y, r.height, h) && fits(z, r.depth, d)) {
        return Err(bad(format!(
            "the box at ({x}, {y}, {z}) of {} × {} × {} elements does not fit in the array's \
             {w} × {h} × {d}",
            r.width, r.height, r.depth
        )));
    }
    Ok(Place {
        handle: a.handle,
        surface: a.surface,
        dims: a.dims(),
        x,
        y,
        z,
    })
}

/// Checks that `a` belongs to `s`'s context, and orders `s` after the array's last work: called
/// by every array operation before it enqueues anything on the array.
pub(crate) fn check_context(a: &ArrayRef<'_>, s: &CudaStream, what: &str) -> Result<()> {
    if a.ctx.cu_ctx() == s.context().cu_ctx() {
        a.wait(s)
    } else {
        Err(Error::ContextMismatch {
            what: what.to_string(),
            expected: s.context().ordinal(),
            found: a.ctx.ordinal(),
        })
    }
}

/// The stream array work is ordered on: the one `on` names (an array has no stream of its own).
/// Array work stages through pooled memory, which a CUDA graph capture cannot record safely:
/// refused while the stream is capturing.
pub(crate) fn stream<'s>(on: On<'s>, what: &str) -> Result<&'s CudaStream> {
    match on {
        On::Stream(s) if super::capturing(s)? => Err(Error::Capturing {
            op: "CUDA array staging",
        }),
        On::Stream(s) => Ok(s),
        On::Host => Err(Error::NoStream(what.to_string())),
    }
}

/// The whole array copied from (`to_array`) or to host memory at `host`, on `stream`.
pub(crate) fn host_copy(s: &CudaStream, a: ArrayRef<'_>, host: u64, to_array: bool) -> Result<()> {
    check_context(&a, s, "a CUDA array")?;
    let (w, h, d) = a.extent;
    let whole = (
        At::Array {
            handle: a.handle,
            x: 0,
            y: 0,
            z: 0,
        },
        0,
        0,
    );
    let linear = (At::Host(host), w as u64, (w * h) as u64);
    let (dst, src) = if to_array {
        (whole, linear)
    } else {
        (linear, whole)
    };
    // SAFETY: the caller's host memory holds the whole array; the array is ours to copy.
    unsafe { copy_box(s, a.size, dst, src, (w as u64, h as u64, d as u64))? };
    a.record(s)
}

/// `acc[ra] += src[rb]` (and `src[rb] ← 0` for `AccumulateAndZero`) where at least one side is
/// an array. The boxes have been checked against their buffers' lengths and shapes by the caller.
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
    let s = stream(on, "a CUDA array")?;
    let size = size_of::<A::Elem>();
    let (acc_len, kind_a) = (acc.len(), acc.kind());
    let (src_len, kind_b) = {
        let b = src.get().expect("a two-box operation has a source");
        (b.len(), b.kind())
    };
    // Each side is either an array (reached through its handle, read-only borrowed) or linear
    // memory (handed on to the linear operations).
    let acc: Either<&mut A, &A> = if acc.array().is_some() {
        Either::Array(&*acc)
    } else {
        Either::Linear(acc)
    };
    let src: Either<Source<'_, B>, &B> = match src {
        Source::Take(b) if b.array().is_some() => Either::Array(&*b),
        Source::Read(b) if b.array().is_some() => Either::Array(b),
        other => Either::Linear(other),
    };
    let arrays = (
        match &acc {
            Either::Array(a) => (*a).array(),
            Either::Linear(_) => None,
        },
        match &src {
            Either::Array(b) => (*b).array(),
            Either::Linear(_) => None,
        },
    );
    let pa = arrays
        .0
        .map(|a| {
            check_context(&a, s, "the accumulator")?;
            place(&a, &ra, "the accumulator")
        })
        .transpose()?;
    let pb = arrays
        .1
        .map(|a| {
            check_context(&a, s, "the source")?;
            place(&a, &rb, "the source")
        })
        .transpose()?;
    // The same array on both sides: boxes judged as in linear memory of the array's layout.
    if let (Some(x), Some(y)) = (pa, pb)
        && x.handle == y.handle
    {
        let sa = ra.check::<A::Elem>("the accumulator", acc_len)?;
        let sb = rb.check::<A::Elem>("the source", src_len)?;
        match relation(&ra, size, (0, sa), (0, sb)) {
            Overlap::Partial => {
                return Err(Error::BadRegion {
                    what: "the source".into(),
                    why: "its box shares elements of the same CUDA array with the accumulator's \
                          without being the same box"
                        .into(),
                });
            }
            Overlap::Same if op == Op::AccumulateAndZero => return Ok(()),
            _ => {}
        }
    }
    // One side an array with a surface, the other device memory: one kernel, nothing staged. The
    // linear side's address guard is held across the launch. Memory that names no context (raw
    // device pointers) is on the stream's device by its constructor's contract.
    let same = |c: Option<&std::sync::Arc<cudarc::driver::CudaContext>>| {
        c.is_none_or(|c| c.cu_ctx() == s.context().cu_ctx())
    };
    let mut acc = acc;
    let mut src = src;
    let no_address = |kind| Error::UnsupportedKinds {
        op: op.name(),
        dst: kind_a,
        src: kind,
        why: "device memory without a device address",
    };
    let done = match (&mut acc, &mut src, pa, pb) {
        (Either::Linear(l), Either::Array(_), None, Some(p)) => {
            let mode = if op == Op::AccumulateAndZero { 1 } else { 0 };
            match direct::<A::Elem>(p, &ra, (l.kind(), same(l.context()), l.len()))? {
                Some(plan) => {
                    let d = l.device_mut(s).ok_or_else(|| no_address(kind_a))?;
                    // SAFETY: `d` is the accumulator's address on `s`, held for the call.
                    unsafe { pass::<A::Elem>(s, plan, &ra, d.addr(), mode)? };
                    true
                }
                None => false,
            }
        }
        (Either::Array(_), Either::Linear(b), Some(p), None) => {
            let plan = match b.get() {
                Some(m) => direct::<A::Elem>(p, &rb, (m.kind(), same(m.context()), m.len()))?,
                None => None,
            };
            match (plan, b) {
                (Some(plan), Source::Read(m)) => {
                    let d = m.device(s).ok_or_else(|| no_address(kind_b))?;
                    // SAFETY: `d` is the source's address on `s`, held for the call.
                    unsafe { pass::<A::Elem>(s, plan, &rb, d.addr(), 2)? };
                    true
                }
                (Some(plan), Source::Take(m)) => {
                    let d = m.device_mut(s).ok_or_else(|| no_address(kind_b))?;
                    // SAFETY: as above.
                    unsafe { pass::<A::Elem>(s, plan, &rb, d.addr(), 3)? };
                    true
                }
                _ => false,
            }
        }
        _ => false,
    };
    if done {
        for a in [arrays.0, arrays.1].into_iter().flatten() {
            a.record(s)?;
        }
        return Ok(());
    }
    let (w, h, d) = ra.shape();
    let n = ra.elements();
    let shape = (w as u64, h as u64, d as u64);
    let packed = Pitched::slices(0, w, h, d, w * size, h);
    let linear = |ptr: u64| (At::Unified(ptr), w as u64, (w * h) as u64);
    // Stage each array box into pooled device memory.
    let stage = |p: Option<Place>| -> Result<Option<Lease<'_>>> {
        let Some(p) = p else { return Ok(None) };
        let l = Lease::new(Memory::Device, n * size, s, s)?;
        // SAFETY: the lease holds `n` elements; the array box was checked.
        unsafe { copy_box(s, size, linear(l.ptr()), p.at(), shape)? };
        Ok(Some(l))
    };
    let same_box = matches!((pa, pb), (Some(x), Some(y))
        if x.handle == y.handle && (x.x, x.y, x.z) == (y.x, y.y, y.z));
    let la = stage(pa)?;
    let lb = if same_box { None } else { stage(pb)? };
    let view = |l: &Lease<'_>| {
        // SAFETY: pooled device memory of `n` elements, used only on `s` until the lease drops.
        unsafe {
            RawShadow::new(
                MemoryKind::Device,
                l.ptr() as *mut A::Elem,
                0,
                n,
                "a staged box",
            )
        }
    };
    let on = On::Stream(s);
    // A linear source taken into an array: zeroed only after the sum is back in the array (the
    // copy back can still fail; the source must then still hold its cotangent).
    let mut zero_linear_source = None;
    match (&la, &lb, acc, src) {
        // The same box on both sides: accumulate doubles it (the zeroing case returned above).
        (Some(l), None, _, Either::Array(_)) => {
            let (mut v, copy) = (view(l)?, view(l)?);
            linear_pair(
                on,
                Op::Accumulate,
                &mut v,
                packed,
                Source::Read(&copy),
                packed,
            )?;
        }
        (Some(l), Some(m), _, _) => {
            let m = view(m)?;
            linear_pair(
                on,
                Op::Accumulate,
                &mut view(l)?,
                packed,
                Source::Read(&m),
                packed,
            )?;
        }
        (Some(l), None, _, Either::Linear(Source::Take(b))) => {
            linear_pair(
                on,
                Op::Accumulate,
                &mut view(l)?,
                packed,
                Source::Read(&*b),
                rb,
            )?;
            zero_linear_source = Some(b);
        }
        (Some(l), None, _, Either::Linear(Source::Read(b))) => {
            linear_pair(
                on,
                Op::Accumulate,
                &mut view(l)?,
                packed,
                Source::Read(b),
                rb,
            )?;
        }
        (None, Some(m), Either::Linear(acc), _) => {
            let m = view(m)?;
            linear_pair(on, Op::Accumulate, acc, ra, Source::Read(&m), packed)?;
        }
        _ => {
            return Err(Error::UnsupportedKinds {
                op: op.name(),
                dst: kind_a,
                src: kind_b,
                why: "no CUDA array among the operands",
            });
        }
    }
    if let (Some(p), Some(l)) = (pa, &la) {
        // SAFETY: the staged box back into the checked array box, ordered after the kernels.
        unsafe { copy_box(s, size, p.at(), linear(l.ptr()), shape)? };
    }
    if let Some(b) = zero_linear_source {
        super::region::zero_region(on, b, rb)?;
    }
    if let (Some(p), Op::AccumulateAndZero) = (pb, op)
        && !same_box
    {
        zero_box(s, p, size, shape)?;
    }
    drop((la, lb));
    for a in [arrays.0, arrays.1].into_iter().flatten() {
        a.record(s)?;
    }
    Ok(())
}

/// One operand: linear memory, or a CUDA array.
enum Either<L, A> {
    Linear(L),
    Array(A),
}

/// `buf[r] ← value` for an array: zero by [`zero_box`]; another value filled into a staged
/// linear box and copied into the array.
pub(super) fn fill<A: ShadowMemory + ?Sized>(
    on: On<'_>,
    buf: &mut A,
    r: Pitched,
    value: A::Elem,
) -> Result<()> {
    let s = stream(on, "a CUDA array")?;
    let a = buf.array().expect("an array operand");
    check_context(&a, s, "the destination")?;
    let p = place(&a, &r, "the destination")?;
    let size = size_of::<A::Elem>();
    let (w, h, d) = r.shape();
    let n = r.elements();
    let shape = (w as u64, h as u64, d as u64);
    let linear = |ptr: u64| (At::Unified(ptr), w as u64, (w * h) as u64);
    let zero = super::region::value_bytes(&value).iter().all(|&b| b == 0);
    if zero {
        zero_box(s, p, size, shape)?;
    } else {
        let l = Lease::new(Memory::Device, n * size, s, s)?;
        // SAFETY: the lease holds `n` elements.
        let mut v = unsafe {
            RawShadow::new(
                MemoryKind::Device,
                l.ptr() as *mut A::Elem,
                0,
                n,
                "a staged box",
            )?
        };
        let packed = Pitched::slices(0, w, h, d, w * size, h);
        super::region::fill_region(On::Stream(s), &mut v, packed, value)?;
        // SAFETY: as above.
        unsafe { copy_box(s, size, p.at(), linear(l.ptr()), shape)? };
    }
    a.record(s)
}

/// The array box staged into pooled device memory, for a read (a sum, a save).
pub(super) fn staged<'s, A: ShadowRead + ?Sized>(
    s: &'s CudaStream,
    buf: &A,
    r: Pitched,
) -> Result<(Lease<'s>, RawShadow<A::Elem>, Pitched)> {
    let a = buf.array().expect("an array operand");
    check_context(&a, s, "a CUDA array")?;
    let p = place(&a, &r, "a CUDA array")?;
    let size = size_of::<A::Elem>();
    let (w, h, d) = r.shape();
    let n = r.elements();
    let l = Lease::new(Memory::Device, n * size, s, s)?;
    // SAFETY: the lease holds `n` elements; the array box was checked.
    unsafe {
        copy_box(
            s,
            size,
            (At::Unified(l.ptr()), w as u64, (w * h) as u64),
            p.at(),
            (w as u64, h as u64, d as u64),
        )?
    };
    a.record(s)?;
    // SAFETY: pooled device memory of `n` elements, used on `s` while the lease lives.
    let v = unsafe {
        RawShadow::new(
            MemoryKind::Device,
            l.ptr() as *mut A::Elem,
            0,
            n,
            "a staged box",
        )?
    };
    Ok((l, v, Pitched::slices(0, w, h, d, w * size, h)))
}
