//! The shadow operations: `accumulate`, `zero` and the fused `accumulate_and_zero`, for every pair
//! of memory kinds. Memory kind → operation → kernel: this file checks lengths, contexts and
//! aliasing, picks where the work runs (the host, or a CUDA stream), then dispatches on what each
//! side offers (a host slice or a device address) to the host loops here, the kernels in
//! [`crate::kernels`], or a staged path through [`crate::staging`].

use crate::cuda::{driver, require_driver};
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::kernels;
use crate::memory::{MemoryKind, Overlap, Region, ShadowMemory};
use crate::staging;
use cudarc::driver::CudaStream;
use std::sync::Arc;

/// Where the shadow work is ordered: on the host, or on the CUDA stream of the copy being
/// differentiated. Nothing in the runtime silently picks another stream.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum On<'a> {
    /// No stream named: host memory is handled by host code before the call returns; device
    /// memory of a cudarc buffer is handled on the buffer's own stream; a raw device pointer is
    /// an error ([`Error::NoStream`]).
    Host,
    /// Work ordered on this stream (the primal copy's stream).
    Stream(&'a CudaStream),
}

impl<'a> On<'a> {
    /// Orders work on `stream` (a `CudaStream` or `Arc<CudaStream>`).
    pub fn stream<S: AsStream + ?Sized>(stream: &'a S) -> Self {
        On::Stream(stream.as_stream())
    }
}

/// Anything that names a CUDA stream: `CudaStream`, `Arc<CudaStream>`, and references to them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a CUDA stream",
    label = "the `#[stream]` parameter must be a `CudaStream` or `Arc<CudaStream>` (or a reference to one)"
)]
pub trait AsStream {
    /// The stream.
    fn as_stream(&self) -> &CudaStream;
}
impl AsStream for CudaStream {
    fn as_stream(&self) -> &CudaStream {
        self
    }
}
impl AsStream for Arc<CudaStream> {
    fn as_stream(&self) -> &CudaStream {
        self
    }
}
impl<S: AsStream + ?Sized> AsStream for &S {
    fn as_stream(&self) -> &CudaStream {
        (**self).as_stream()
    }
}

/// Where one operation runs.
enum Site<'s> {
    Host,
    Borrowed(&'s CudaStream),
    Owned(Arc<CudaStream>),
}

/// Picks where an operation on `bufs` runs, and checks that device buffers belong to the
/// stream's context. Nothing is written.
fn site<'s>(on: On<'s>, bufs: &[(&str, Placement<'_>)]) -> Result<Site<'s>> {
    let site = match on {
        On::Stream(s) => Site::Borrowed(s),
        On::Host => {
            let mut site = Site::Host;
            for (what, b) in bufs {
                if b.kind == MemoryKind::Device {
                    match b.home {
                        Some(home) => {
                            site = Site::Owned(home.clone());
                            break;
                        }
                        None => return Err(Error::NoStream(what.to_string())),
                    }
                }
            }
            site
        }
    };
    let stream = match &site {
        Site::Host => return Ok(site),
        Site::Borrowed(s) => *s,
        Site::Owned(s) => &**s,
    };
    require_driver()?;
    let expected = stream.context();
    for (what, b) in bufs {
        if let Some(found) = b.ctx
            && found.0 != expected.cu_ctx() as usize
        {
            return Err(Error::ContextMismatch {
                what: what.to_string(),
                expected: expected.ordinal(),
                found: found.1,
            });
        }
    }
    Ok(site)
}

/// The facts about a buffer that [`site`] needs.
struct Placement<'m> {
    kind: MemoryKind,
    home: Option<&'m Arc<CudaStream>>,
    /// (context handle, device ordinal)
    ctx: Option<(usize, usize)>,
}

fn placement<M: ShadowMemory + ?Sized>(m: &M) -> Placement<'_> {
    Placement {
        kind: m.kind(),
        home: m.home_stream(),
        ctx: m.context().map(|c| (c.cu_ctx() as usize, c.ordinal())),
    }
}

pub(crate) fn check_len(what: &str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what: what.to_string(),
            expected,
            found,
        })
    }
}

pub(crate) fn overlap_error<A, B>(what: &str, dst: &A, src: &B) -> Error
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory + ?Sized,
{
    let (d, s) = (dst.region(), src.region());
    Error::PartialOverlap {
        what: what.to_string(),
        dst_start: d.start,
        dst_end: d.end,
        src_start: s.start,
        src_end: s.end,
    }
}

/// `acc += src`, element-wise, on the stream `on` names. Lengths must match.
///
/// If `acc` and `src` are the same memory, `acc` is doubled; a partial overlap is refused.
pub fn accumulate<A, B>(on: On<'_>, acc: &mut A, src: &B) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    check_len("the source of `accumulate`", acc.len(), src.len())?;
    let site = site(
        on,
        &[
            ("the accumulator", placement(acc)),
            ("the source", placement(src)),
        ],
    )?;
    if let Some(s) = stream_of(&site)
        && both_on_device(&*acc, src)
    {
        return on_device(s, "accumulate", acc, SrcRef::Read(src));
    }
    match acc.region().relation(src.region()) {
        Overlap::Partial => Err(overlap_error("accumulate", &*acc, src)),
        Overlap::Same => double(site, acc),
        Overlap::Disjoint => add_into(site, acc, SrcRef::Read(src)),
    }
}

/// `buf ← 0`, on the stream `on` names.
pub fn zero<A: ShadowMemory + ?Sized>(on: On<'_>, buf: &mut A) -> Result<()> {
    let site = site(on, &[("the buffer", placement(buf))])?;
    let n = buf.len();
    if let Some(s) = stream_of(&site)
        && let Some(d) = buf.device_mut(s)
    {
        // SAFETY: `d` covers `n` elements, ordered on `s`.
        return unsafe { kernels::zero(s, d.addr, n * size_of::<A::Elem>()) };
    }
    host_fill_zero(buf)
}

/// `acc += src; src ← 0` in one pass (one kernel launch for device data): the reverse of a copy.
///
/// If `acc` and `src` are the same memory this is the identity (the reverse of a self-copy keeps
/// its cotangent); a partial overlap is refused before anything is written.
pub fn accumulate_and_zero<A, B>(on: On<'_>, acc: &mut A, src: &mut B) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    check_len("the source of `accumulate_and_zero`", acc.len(), src.len())?;
    let site = site(
        on,
        &[
            ("the accumulator", placement(acc)),
            ("the source", placement(src)),
        ],
    )?;
    if let Some(s) = stream_of(&site)
        && both_on_device(&*acc, &*src)
    {
        return on_device(s, "accumulate_and_zero", acc, SrcRef::Take(src));
    }
    match acc.region().relation(src.region()) {
        Overlap::Partial => Err(overlap_error("accumulate_and_zero", &*acc, &*src)),
        Overlap::Same => Ok(()),
        Overlap::Disjoint => add_into(site, acc, SrcRef::Take(src)),
    }
}

/// Per-operand size from which `accumulate_and_zero` with both operands in device memory is the
/// accumulate kernel followed by a driver memset instead of the one fused launch. Below it, saving a launch is what counts (the
/// fused kernel is about 2x faster); above it, both move the same bytes and the driver's memset
/// writes faster than a kernel that mixes reads and writes (measured on the H200: the fused kernel
/// was 1.17x faster than accumulate + memset at 4M f32 (16 MiB) but 0.86x at 8M and 0.94x at 16M;
/// `benches/shadow_ops.rs` prints both).
pub const FUSED_SPLIT_BYTES: usize = 32 << 20;

/// Whether kernels can reach both operands.
fn both_on_device<A, B>(acc: &A, src: &B) -> bool
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory + ?Sized,
{
    ShadowMemory::kind(acc).device_accessible() && ShadowMemory::kind(src).device_accessible()
}

/// The hot path: both operands device-reachable, work on stream `s`. The addresses are taken once
/// (for cudarc buffers that is also where cudarc orders them against other streams), aliasing is
/// judged on them, and one launch follows; nothing is launched on a partial overlap.
fn on_device<A, B>(
    s: &CudaStream,
    op: &'static str,
    acc: &mut A,
    mut src: SrcRef<'_, B>,
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let n = acc.len();
    let bytes = n * size_of::<A::Elem>();
    let dtype = A::Elem::DTYPE;
    let no_address = |acc: &A, src: &SrcRef<'_, B>| Error::UnsupportedKinds {
        op,
        dst: ShadowMemory::kind(acc),
        src: src.kind(),
        why: "no device address",
    };
    let zero_src = matches!(src, SrcRef::Take(_));
    // The split pays off only in device memory; across the host link (pinned, unified memory)
    // one fused pass moves the reads and the zero writes in both directions at once.
    let in_device_memory =
        ShadowMemory::kind(acc) == MemoryKind::Device && src.kind() == MemoryKind::Device;
    {
        let b = match &mut src {
            SrcRef::Read(b) => b.device(s),
            SrcRef::Take(b) => b.device_mut(s),
        };
        let a = acc.device_mut(s);
        let (Some(a), Some(b)) = (a, b) else {
            return Err(no_address(acc, &src));
        };
        let relation = Region::of::<A::Elem>(a.addr, n).relation(Region::of::<A::Elem>(b.addr, n));
        // SAFETY (all launches below): `a` and `b` are device addresses of `n` elements each,
        // ordered on `s`; they are disjoint, or the same memory where a thread reads each element
        // before writing it.
        match (relation, zero_src) {
            (Overlap::Disjoint, false) => {
                return unsafe { kernels::accumulate(s, dtype, a.addr, b.addr, n, false) };
            }
            (Overlap::Disjoint, true) if bytes >= FUSED_SPLIT_BYTES && in_device_memory => {
                return unsafe {
                    kernels::accumulate(s, dtype, a.addr, b.addr, n, false)?;
                    kernels::zero(s, b.addr, bytes)
                };
            }
            (Overlap::Disjoint, true) => {
                return unsafe { kernels::accumulate(s, dtype, a.addr, b.addr, n, true) };
            }
            // `acc += acc`.
            (Overlap::Same, false) => {
                return unsafe { kernels::accumulate(s, dtype, a.addr, a.addr, n, false) };
            }
            // The reverse of a self-copy keeps its cotangent.
            (Overlap::Same, true) => return Ok(()),
            (Overlap::Partial, _) => {}
        }
    }
    Err(match src {
        SrcRef::Read(b) => overlap_error(op, &*acc, b),
        SrcRef::Take(b) => overlap_error(op, &*acc, &*b),
    })
}

/// The source of an accumulation: read only, or read and then zeroed.
enum SrcRef<'b, B: ?Sized> {
    Read(&'b B),
    Take(&'b mut B),
}

impl<B: ShadowMemory + ?Sized> SrcRef<'_, B> {
    /// The source's memory kind.
    fn kind(&self) -> MemoryKind {
        match self {
            SrcRef::Read(b) => ShadowMemory::kind(*b),
            SrcRef::Take(b) => ShadowMemory::kind(&**b),
        }
    }
}

fn stream_of<'a>(site: &'a Site<'_>) -> Option<&'a CudaStream> {
    match site {
        Site::Host => None,
        Site::Borrowed(s) => Some(s),
        Site::Owned(s) => Some(s),
    }
}

fn host_fill_zero<A: ShadowMemory + ?Sized>(buf: &mut A) -> Result<()> {
    let kind = ShadowMemory::kind(buf);
    match buf.host_mut()? {
        Some(h) => {
            h.fill(A::Elem::zero());
            Ok(())
        }
        None => Err(Error::UnsupportedKinds {
            op: "zero",
            dst: kind,
            src: kind,
            why: "this memory is neither host- nor device-accessible here",
        }),
    }
}

/// `acc += acc`.
fn double<A: ShadowMemory + ?Sized>(site: Site<'_>, acc: &mut A) -> Result<()> {
    let n = acc.len();
    if let Some(s) = stream_of(&site)
        && let Some(d) = acc.device_mut(s)
    {
        // SAFETY: both operands are the same `n` elements, ordered on `s`; the kernel reads
        // each element before writing it, in the same thread.
        return unsafe { kernels::accumulate(s, A::Elem::DTYPE, d.addr, d.addr, n, false) };
    }
    match acc.host_mut()? {
        Some(h) => {
            h.iter_mut().for_each(|x| *x = A::Elem::add(*x, *x));
            Ok(())
        }
        None => Err(Error::UnsupportedKinds {
            op: "accumulate",
            dst: ShadowMemory::kind(acc),
            src: ShadowMemory::kind(acc),
            why: "this memory is neither host- nor device-accessible here",
        }),
    }
}

/// `acc += src` (and `src ← 0` for [`SrcRef::Take`]) on disjoint buffers of equal length.
fn add_into<A, B>(site: Site<'_>, acc: &mut A, src: SrcRef<'_, B>) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let n = acc.len();
    let bytes = n * size_of::<A::Elem>();
    let dtype = A::Elem::DTYPE;
    let Some(s) = stream_of(&site) else {
        return host_add(acc, src);
    };
    let (acc_kind, src_kind) = (ShadowMemory::kind(acc), src.kind());
    let unsupported = |why| Error::UnsupportedKinds {
        op: "accumulate",
        dst: acc_kind,
        src: src_kind,
        why,
    };
    let acc_on_device = acc_kind.device_accessible();
    let src_on_device = src_kind.device_accessible();
    match (acc_on_device, src_on_device) {
        // Both reachable by kernels (the public operations take this path before coming here).
        (true, true) => on_device(s, "accumulate", acc, src),
        // Device accumulator, pageable source: stage the source on the device.
        (true, false) => {
            let guard = staging::lock(s)?;
            let Some(a) = acc.device_mut(s) else {
                return Err(unsupported("no device address"));
            };
            guard.with(|st| {
                let stage = st.device(s, bytes)?;
                let read = |b: &B| -> Result<()> {
                    let h = b
                        .host()?
                        .ok_or_else(|| unsupported("the source is not host-readable"))?;
                    // SAFETY: `stage` holds `bytes`; a pageable source is read before the call returns.
                    unsafe { kernels::copy_htod(s, stage, h.as_ptr().cast(), bytes) }
                };
                match src {
                    SrcRef::Read(b) => read(b)?,
                    SrcRef::Take(b) => {
                        read(b)?;
                        host_fill_zero(b)?;
                    }
                }
                // SAFETY: `a` and `stage` hold `n` elements, ordered on `s`.
                unsafe { kernels::accumulate(s, dtype, a.addr, stage, n, false) }
            })
        }
        // Pageable accumulator, device source: bring the source to pinned staging, add on the host.
        (false, true) => {
            let guard = staging::lock(s)?;
            guard.with(|st| {
                let stage = st.host(s, bytes)?;
                {
                    let read = |addr: u64| unsafe { kernels::copy_dtoh(s, stage, addr, bytes) };
                    match &src {
                        SrcRef::Read(b) => {
                            let d = b
                                .device(s)
                                .ok_or_else(|| unsupported("no device address"))?;
                            read(d.addr)?;
                        }
                        SrcRef::Take(_) => {}
                    }
                }
                if let SrcRef::Take(b) = src {
                    let d = b
                        .device_mut(s)
                        .ok_or_else(|| unsupported("no device address"))?;
                    // SAFETY: `stage` holds `bytes`; the zeroing is ordered after the copy on `s`.
                    unsafe {
                        kernels::copy_dtoh(s, stage, d.addr, bytes)?;
                        kernels::zero(s, d.addr, bytes)?;
                    }
                }
                s.synchronize()
                    .map_err(driver("cuStreamSynchronize (device to host accumulation)"))?;
                let h = acc
                    .host_mut()?
                    .ok_or_else(|| unsupported("the accumulator is not host-writable"))?;
                // SAFETY: the stream is synchronised, so `stage` holds the `n` source elements.
                let staged = unsafe { core::slice::from_raw_parts(stage.cast::<A::Elem>(), n) };
                host_accumulate(h, staged);
                Ok(())
            })
        }
        (false, false) => host_add(acc, src),
    }
}

fn host_add<A, B>(acc: &mut A, src: SrcRef<'_, B>) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let (acc_kind, src_kind) = (ShadowMemory::kind(acc), src.kind());
    let unsupported = || Error::UnsupportedKinds {
        op: "accumulate",
        dst: acc_kind,
        src: src_kind,
        why: "device memory needs a CUDA stream: name the copy's stream with `#[stream]`",
    };
    let a = acc.host_mut()?.ok_or_else(unsupported)?;
    match src {
        SrcRef::Read(b) => host_accumulate(a, b.host()?.ok_or_else(unsupported)?),
        SrcRef::Take(b) => host_accumulate_and_zero(a, b.host_mut()?.ok_or_else(unsupported)?),
    }
    Ok(())
}

fn host_accumulate<T: Differentiable>(acc: &mut [T], src: &[T]) {
    for (a, s) in acc.iter_mut().zip(src) {
        *a = T::add(*a, *s);
    }
}

fn host_accumulate_and_zero<T: Differentiable>(acc: &mut [T], src: &mut [T]) {
    for (a, s) in acc.iter_mut().zip(src) {
        *a = T::add(*a, *s);
        *s = T::zero();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::raw::RawShadow;

    #[test]
    fn host_ops() {
        let mut a = vec![1.0f64, 2.0, 3.0];
        let mut b = vec![10.0f64, 20.0, 30.0];
        accumulate(On::Host, &mut a, &b).unwrap();
        assert_eq!(a, [11.0, 22.0, 33.0]);
        accumulate_and_zero(On::Host, &mut a, &mut b).unwrap();
        assert_eq!(a, [21.0, 42.0, 63.0]);
        assert_eq!(b, [0.0; 3]);
        zero(On::Host, &mut a[1..]).unwrap();
        assert_eq!(a, [21.0, 0.0, 0.0]);
    }

    #[test]
    fn length_mismatch_changes_nothing() {
        let mut a = vec![1.0f32; 3];
        let mut b = vec![2.0f32; 4];
        let e = accumulate_and_zero(On::Host, &mut a, &mut b).unwrap_err();
        assert!(
            matches!(
                e,
                Error::LengthMismatch {
                    expected: 3,
                    found: 4,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(a, [1.0; 3]);
        assert_eq!(b, [2.0; 4]);
    }

    #[test]
    fn raw_device_pointer_without_stream_is_refused() {
        let mut v = vec![1.0f32; 4];
        let mut host = vec![0.0f32; 4];
        // The pointer is never dereferenced: the operation is refused first.
        let mut d =
            unsafe { RawShadow::new(MemoryKind::Device, v.as_mut_ptr(), 0, 4, "d") }.unwrap();
        let e = accumulate_and_zero(On::Host, &mut host, &mut d).unwrap_err();
        assert!(matches!(e, Error::NoStream(_)), "{e}");
        assert_eq!(host, [0.0; 4]);
    }

    #[test]
    fn aliasing_is_identity_or_refused() {
        let mut v = vec![1.0f32, 2.0, 3.0, 4.0];
        let p = v.as_mut_ptr();
        unsafe {
            let mut x = RawShadow::new(MemoryKind::Host, p, 0, 3, "x").unwrap();
            let mut same = RawShadow::new(MemoryKind::Host, p, 0, 3, "same").unwrap();
            accumulate_and_zero(On::Host, &mut x, &mut same).unwrap();
            let mut shifted = RawShadow::new(MemoryKind::Host, p, 1, 3, "shifted").unwrap();
            let e = accumulate_and_zero(On::Host, &mut x, &mut shifted).unwrap_err();
            assert!(matches!(e, Error::PartialOverlap { .. }), "{e}");
            accumulate(On::Host, &mut x, &same).unwrap();
        }
        assert_eq!(v, [2.0, 4.0, 6.0, 4.0]);
    }
}
