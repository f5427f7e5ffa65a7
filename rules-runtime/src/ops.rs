//! The shadow operations: `accumulate`, `zero` and the fused `accumulate_and_zero`, for every pair
//! of memory kinds. Memory kind → operation → kernel: this file checks lengths and aliasing, then
//! dispatches on the two [`Access`] kinds to the host loops here or the device kernels.

use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::{Access, AccessMut, Overlap, ShadowMemory};

/// Where the shadow work is ordered: on the host, or on the CUDA stream of the copy being
/// differentiated. Nothing in the runtime silently picks another stream.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum On<'a> {
    /// Plain host work, done before the call returns.
    Host,
    /// Work ordered on this stream (the primal copy's stream).
    Stream(&'a cudarc::driver::CudaStream),
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
    fn as_stream(&self) -> &cudarc::driver::CudaStream;
}
impl AsStream for cudarc::driver::CudaStream {
    fn as_stream(&self) -> &cudarc::driver::CudaStream {
        self
    }
}
impl AsStream for std::sync::Arc<cudarc::driver::CudaStream> {
    fn as_stream(&self) -> &cudarc::driver::CudaStream {
        self
    }
}
impl<S: AsStream + ?Sized> AsStream for &S {
    fn as_stream(&self) -> &cudarc::driver::CudaStream {
        (**self).as_stream()
    }
}

fn check_len(what: &str, expected: usize, found: usize) -> Result<()> {
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

/// `acc += src`, element-wise. Lengths must match.
///
/// If `acc` and `src` are the same memory, `acc` is doubled; a partial overlap is refused.
pub fn accumulate<A, B>(on: On<'_>, acc: &mut A, src: &B) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    check_len("the source of `accumulate`", acc.len(), src.len())?;
    match acc.region().relation(src.region()) {
        Overlap::Partial => return Err(overlap_error("accumulate", &*acc, src)),
        Overlap::Same => {
            return match acc.access_mut() {
                AccessMut::Host(a) => {
                    a.iter_mut().for_each(|x| *x = A::Elem::add(*x, *x));
                    Ok(())
                }
            };
        }
        Overlap::Disjoint => {}
    }
    let _ = on;
    match (acc.access_mut(), src.access()) {
        (AccessMut::Host(a), Access::Host(s)) => {
            host_accumulate(a, s);
            Ok(())
        }
    }
}

/// `buf ← 0`.
pub fn zero<A: ShadowMemory + ?Sized>(on: On<'_>, buf: &mut A) -> Result<()> {
    let _ = on;
    match buf.access_mut() {
        AccessMut::Host(a) => {
            a.fill(A::Elem::zero());
            Ok(())
        }
    }
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
    match acc.region().relation(src.region()) {
        Overlap::Partial => return Err(overlap_error("accumulate_and_zero", &*acc, &*src)),
        Overlap::Same => return Ok(()),
        Overlap::Disjoint => {}
    }
    let _ = on;
    match (acc.access_mut(), src.access_mut()) {
        (AccessMut::Host(a), AccessMut::Host(s)) => {
            host_accumulate_and_zero(a, s);
            Ok(())
        }
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
    use crate::memory::MemoryKind;
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
