//! Region operations with CUDA array memory on either side. An array has no address; the kernels
//! reach it through its surface object.
//! - Array and device memory of the stream's context: one kernel (`array_pass_*`) reads the array
//!   box through the surface, adds, and writes the sum and the zeros where they go.
//! - Otherwise (host, pinned or unified memory, another array, an array without a surface): the
//!   array box is copied into pooled linear device memory (`cuMemcpy3DAsync`), the linear
//!   operation runs there (the strided kernels, or the host routes for host memory on the other
//!   side), an accumulator's box is copied back, and a source's box is zeroed by a kernel of
//!   surface stores (memset is invalid on arrays), or by a copy from the pool's zero buffer for an
//!   array without a surface. A linear source is zeroed last, after the sum is back in the array.
//!
//! Everything is ordered on the copy's stream, after the array's last work (its event); nothing
//! waits on the host beyond what the linear route does.

use super::{fill_region, pair as linear_pair, zero_region};
use crate::device::region::{self as boxes, BoxInto, BoxOf, Pass};
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::array::{ArrayElement, ArrayRef, CudaArray, Place};
use crate::memory::staged::Staged;
use crate::memory::view::{DevMut, DevRef};
use crate::memory::{MemoryKind, Overlap, ShadowMemory, ShadowRead};
use crate::ops::{On, Op, Source, capturing};
use crate::region::{Pitched, relation};
use cudarc::driver::CudaStream;

impl<T: ArrayElement> CudaArray<T> {
    /// A new array of this extent with every element `+0.0`, ordered on `stream`.
    pub fn zeroed(stream: &CudaStream, width: usize, height: usize, depth: usize) -> Result<Self> {
        let mut a = Self::new(stream.context(), width, height, depth)?;
        let whole = a.whole();
        zero_region(On::Stream(stream), &mut a, whole)?;
        Ok(a)
    }

    /// A zeroed array of the same extent and context: a shadow for this one.
    pub fn shadow_like(&self, stream: &CudaStream) -> Result<Self> {
        let (w, h, d) = self.extent();
        Self::zeroed(stream, w, h, d)
    }
}

/// A contiguous box of `r`'s shape from element 0: where an array box is staged.
fn packed<T>(r: &Pitched) -> Pitched {
    let (w, h, d) = r.shape();
    Pitched::slices(0, w, h, d, w * size_of::<T>(), h)
}

fn no_view(what: &'static str) -> Error {
    Error::UnsupportedKinds {
        op: what,
        dst: MemoryKind::Device,
        src: MemoryKind::Array,
        why: "pooled staging memory has no device view",
    }
}

/// The array box `p` copied into pooled device memory (packed), on `s`.
fn stage_in<'s, T: Differentiable>(s: &'s CudaStream, p: Place<'_>) -> Result<Staged<'s, T>> {
    let shape = p.shape();
    let r = packed::<T>(&Pitched::slices(0, shape.0, shape.1, shape.2, 0, 0));
    let mut st = Staged::<T>::new(r.elements(), s)?;
    {
        let mut v = DevMut::of(&mut st, s).ok_or_else(|| no_view("array staging"))?;
        boxes::copy(s, BoxInto::Dev(&mut v, &r), BoxOf::Array(p), shape)?;
    }
    Ok(st)
}

/// The staged box `st` (packed) copied back into the array box `p`, on `s`.
fn stage_back<T: Differentiable>(s: &CudaStream, p: Place<'_>, st: &Staged<'_, T>) -> Result<()> {
    let shape = p.shape();
    let r = packed::<T>(&Pitched::slices(0, shape.0, shape.1, shape.2, 0, 0));
    let v = DevRef::of(st, s).ok_or_else(|| no_view("array staging"))?;
    boxes::copy(s, BoxInto::Array(p), BoxOf::Dev(&v, &r), shape)
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
        On::Stream(s) if capturing(s)? => Err(Error::Capturing {
            op: "CUDA array staging",
        }),
        On::Stream(s) => Ok(s),
        On::Host => Err(Error::NoStream(what.to_string())),
    }
}

/// `acc[ra] += src[rb]` (and `src[rb] ← 0` for `AccumulateAndZero`) where at least one side is
/// an array. The boxes have been checked against their buffers' lengths and shapes by the caller.
pub(in crate::ops) fn pair<A, B>(
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
        let b = src
            .get()
            .ok_or_else(|| no_view("a two-box operation without a source"))?;
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
            a.place(&ra, "the accumulator")
        })
        .transpose()?;
    let pb = arrays
        .1
        .map(|a| {
            check_context(&a, s, "the source")?;
            a.place(&rb, "the source")
        })
        .transpose()?;
    // The same array on both sides: boxes judged as in linear memory of the array's layout.
    if let (Some(x), Some(y)) = (pa, pb)
        && x.same_array(&y)
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
    // One side an array with a surface, the other device memory of the stream's context: one
    // kernel, nothing staged. The linear side's view (and cudarc's guard) is held across the
    // launch. Memory that names no context (raw device pointers) is on the stream's device by its
    // constructor's contract.
    let here = |kind: MemoryKind, ctx: Option<&std::sync::Arc<cudarc::driver::CudaContext>>| {
        kind == MemoryKind::Device && ctx.is_none_or(|c| c.cu_ctx() == s.context().cu_ctx())
    };
    let passes = |p: Option<Place<'_>>| p.as_ref().is_some_and(boxes::can_pass);
    let acc_here = match &acc {
        Either::Linear(l) => here(l.kind(), l.context()) && passes(pb),
        Either::Array(_) => false,
    };
    let src_here = match &src {
        Either::Linear(l) => l.get().is_some_and(|m| here(m.kind(), m.context())) && passes(pa),
        Either::Array(_) => false,
    };
    let no_address = |kind| Error::UnsupportedKinds {
        op: op.name(),
        dst: kind_a,
        src: kind,
        why: "device memory without a device address",
    };
    let record = |s: &CudaStream| -> Result<()> {
        for a in [arrays.0, arrays.1].into_iter().flatten() {
            a.record(s)?;
        }
        Ok(())
    };
    match (acc, src, pa, pb) {
        (Either::Linear(l), Either::Array(_), None, Some(p)) if acc_here => {
            let mut d = DevMut::of(l, s).ok_or_else(|| no_address(kind_a))?;
            let pass = match op {
                Op::AccumulateAndZero => Pass::TakeIntoLinear,
                _ => Pass::IntoLinear,
            };
            boxes::array_pass(s, p, (&mut d, &ra), pass)?;
            record(s)
        }
        (Either::Array(_), Either::Linear(Source::Read(m)), Some(p), None) if src_here => {
            let d = DevRef::of(m, s).ok_or_else(|| no_address(kind_b))?;
            boxes::array_pass_read(s, p, (&d, &rb))?;
            record(s)
        }
        (Either::Array(_), Either::Linear(Source::Take(m)), Some(p), None) if src_here => {
            let mut d = DevMut::of(m, s).ok_or_else(|| no_address(kind_b))?;
            boxes::array_pass(s, p, (&mut d, &rb), Pass::TakeIntoArray)?;
            record(s)
        }
        (acc, src, pa, pb) => {
            staged_pair::<A, B>(s, op, (acc, ra, pa), (src, rb, pb))?;
            record(s)
        }
    }
}

/// The staged route of [`pair`]: each array box into pooled device memory, the linear operation
/// there, the accumulator's box back into its array, then the zeroing of a taken source (its
/// array box, or its linear box), last.
#[allow(clippy::type_complexity)]
fn staged_pair<A, B>(
    s: &CudaStream,
    op: Op,
    (acc, ra, pa): (Either<&mut A, &A>, Pitched, Option<Place<'_>>),
    (src, rb, pb): (Either<Source<'_, B>, &B>, Pitched, Option<Place<'_>>),
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let packed = packed::<A::Elem>(&ra);
    let mut la = pa.map(|p| stage_in::<A::Elem>(s, p)).transpose()?;
    let lb = pb.map(|p| stage_in::<A::Elem>(s, p)).transpose()?;
    let on_s = On::Stream(s);
    // A linear source taken into an array: zeroed only after the sum is back in the array (the
    // copy back can still fail; the source must then still hold its cotangent).
    let mut zero_linear_source = None;
    match (&mut la, &lb, acc, src) {
        (Some(l), Some(m), _, _) => {
            linear_pair(on_s, Op::Accumulate, l, packed, Source::Read(m), packed)?;
        }
        (Some(l), None, _, Either::Linear(Source::Take(b))) => {
            linear_pair(on_s, Op::Accumulate, l, packed, Source::Read(&*b), rb)?;
            zero_linear_source = Some(b);
        }
        (Some(l), None, _, Either::Linear(Source::Read(b))) => {
            linear_pair(on_s, Op::Accumulate, l, packed, Source::Read(b), rb)?;
        }
        (None, Some(m), Either::Linear(acc), _) => {
            linear_pair(on_s, Op::Accumulate, acc, ra, Source::Read(m), packed)?;
        }
        _ => {
            return Err(Error::UnsupportedKinds {
                op: op.name(),
                dst: MemoryKind::Array,
                src: MemoryKind::Array,
                why: "no CUDA array among the operands",
            });
        }
    }
    if let (Some(p), Some(l)) = (pa, &la) {
        stage_back(s, p, l)?;
    }
    if let Some(b) = zero_linear_source {
        zero_region(on_s, b, rb)?;
    }
    if let (Some(p), Op::AccumulateAndZero) = (pb, op) {
        boxes::zero_array(s, p)?;
    }
    Ok(())
}

/// One operand: linear memory, or a CUDA array.
enum Either<L, A> {
    Linear(L),
    Array(A),
}

/// `buf[r] ← value` for an array: zeroed by [`boxes::zero_array`]; another value filled into a
/// staged linear box and copied into the array.
pub(in crate::ops) fn fill<A: ShadowMemory + ?Sized>(
    on: On<'_>,
    buf: &mut A,
    r: Pitched,
    value: A::Elem,
) -> Result<()> {
    let s = stream(on, "a CUDA array")?;
    let a = buf.array().ok_or_else(|| no_view("fill"))?;
    check_context(&a, s, "the destination")?;
    let p = a.place(&r, "the destination")?;
    // All bits zero (+0.0, not -0.0): the zeroing kernel.
    if value.to_parts().iter().all(|x| x.to_bits() == 0) {
        boxes::zero_array(s, p)?;
    } else {
        let mut st = Staged::<A::Elem>::new(r.elements(), s)?;
        fill_region(On::Stream(s), &mut st, packed::<A::Elem>(&r), value)?;
        stage_back(s, p, &st)?;
    }
    a.record(s)
}

/// The array box `buf[r]` staged into pooled device memory, packed, for a read (a sum, a save),
/// with its box there.
pub(in crate::ops) fn staged<'s, A: ShadowRead + ?Sized>(
    s: &'s CudaStream,
    buf: &A,
    r: Pitched,
) -> Result<(Staged<'s, A::Elem>, Pitched)> {
    let a = buf.array().ok_or_else(|| no_view("array staging"))?;
    check_context(&a, s, "a CUDA array")?;
    let p = a.place(&r, "a CUDA array")?;
    let st = stage_in::<A::Elem>(s, p)?;
    a.record(s)?;
    Ok((st, packed::<A::Elem>(&r)))
}
