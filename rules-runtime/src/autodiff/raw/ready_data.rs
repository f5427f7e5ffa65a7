//! The ready-made copies of data that carries no derivative (integers, bytes, flags): the copy
//! runs, in every mode, and nothing else does. Enzyme would otherwise look into the driver call;
//! each primal here is registered as an inactive function, which Enzyme runs where the primal
//! runs and never differentiates.
//!
//! Device memory of such data enters a differentiated function as the handle of an [`AdData`]
//! (made outside it, like an `AdPair`, but without a shadow); pageable memory as a slice.

use super::{AdBuf, PRIMAL, Registration, kind_code};
use crate::autodiff::{AdError, Bridge, record};
use crate::error::Error;
use crate::memory::MemoryKind;
use cudarc::driver::{
    CudaSlice, CudaStream, CudaViewMut, DevicePtrMut, DeviceRepr, SyncOnDrop, UnifiedSlice, sys,
};
use std::marker::PhantomData;
use std::sync::Arc;

/// cudarc's device buffers whose address [`AdData`] takes: sealed, so that the address and
/// length the bridges write through are cudarc's own.
pub trait DataBuffer<T>: DevicePtrMut<T> + sealed::Sealed {}
impl<T> DataBuffer<T> for CudaSlice<T> {}
impl<T> DataBuffer<T> for CudaViewMut<'_, T> {}
impl<T> DataBuffer<T> for UnifiedSlice<T> {}

mod sealed {
    pub trait Sealed {}
    impl<T> Sealed for cudarc::driver::CudaSlice<T> {}
    impl<T> Sealed for cudarc::driver::CudaViewMut<'_, T> {}
    impl<T> Sealed for cudarc::driver::UnifiedSlice<T> {}
}

/// A device buffer of data without a derivative (`CudaSlice<i32>`, ...), borrowed for `'a` as a
/// handle for a differentiated function: pass [`AdData::handle`] as a `Const` argument and hand
/// it to the ready-made copies. cudarc's guard is held until it is dropped (the bridges' work is
/// then recorded on the buffer's events), and each bridge waits for its stream before returning.
pub struct AdData<'a, T> {
    handle: AdBuf<T>,
    _guard: SyncOnDrop<'a>,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T: DeviceRepr> AdData<'a, T> {
    /// The handle of `buf`, for copies ordered on `stream` (of the buffer's context).
    ///
    /// Returns [`Error::ContextMismatch`] for a buffer of another context.
    pub fn new<B: DataBuffer<T>>(
        buf: &'a mut B,
        stream: &'a Arc<CudaStream>,
    ) -> crate::Result<Self> {
        let ctx = buf.stream().context();
        if ctx.cu_ctx() != stream.context().cu_ctx() {
            return Err(Error::ContextMismatch {
                what: "the AdData's buffer".into(),
                expected: stream.context().ordinal(),
                found: ctx.ordinal(),
            });
        }
        let len = buf.len();
        let (addr, guard) = buf.device_ptr_mut(stream);
        Ok(AdData {
            handle: AdBuf {
                ptr: addr as *mut T,
                len,
                partner: core::ptr::null_mut(),
                stream: core::ptr::from_ref(stream),
                kind: kind_code(MemoryKind::Device),
                role: PRIMAL,
            },
            _guard: guard,
            _borrow: PhantomData,
        })
    }

    /// The handle, for a `Const` argument of the differentiated function.
    pub fn handle(&self) -> &AdBuf<T> {
        &self.handle
    }
}

/// One side of a data copy: a handle, or a pageable slice (pointer, length).
#[derive(Clone, Copy)]
pub(super) enum DataSide<T> {
    Handle(*const AdBuf<T>),
    Slice(*mut T, usize),
}

impl<T> DataSide<T> {
    /// The side's address, length and stream (a slice has none).
    ///
    /// # Safety
    /// A handle points at a live `AdBuf`; a slice is valid for its length.
    unsafe fn open<'s>(
        self,
        what: &'static str,
    ) -> Result<(u64, usize, Option<&'s Arc<CudaStream>>), AdError> {
        match self {
            DataSide::Slice(p, n) => Ok((p as u64, n, None)),
            DataSide::Handle(h) => {
                // SAFETY: a live handle, by this function's contract.
                let h = unsafe { &*h };
                if h.role != PRIMAL || h.stream.is_null() {
                    return Err(AdError::Handle {
                        what,
                        why: "not the handle of an AdData or the primal handle of an AdPair made with a stream".into(),
                    });
                }
                // SAFETY: the stream of a live handle's pair or AdData, which outlives the call.
                Ok((h.ptr as u64, h.len, Some(unsafe { &*h.stream })))
            }
        }
    }
}

/// A data copy `dst ← src` (`src: None`: `dst ← 0`), every check before the driver call: the
/// handles' roles, one stream, equal lengths; then the copy on that stream, waited for.
///
/// # Safety
/// As [`DataSide::open`] for both sides.
pub(super) unsafe fn data_copy<T>(
    label: &'static str,
    which: Bridge,
    dst: DataSide<T>,
    src: Option<DataSide<T>>,
) {
    let _ = record((label, which), || {
        // SAFETY: this function's contract.
        let (d, dn, ds) = unsafe { dst.open("dst")? };
        let Some(src) = src else {
            let s = ds.ok_or_else(|| AdError::Handle {
                what: "dst",
                why: "memset_zeros sets device memory: an AdData handle".into(),
            })?;
            let bytes = dn * size_of::<T>();
            // SAFETY: `dn` elements of the handle's device buffer, on its stream.
            let set = unsafe { sys::cuMemsetD8Async(d, 0, bytes, s.cu_stream()) }.result();
            return finish(s, set);
        };
        // SAFETY: this function's contract.
        let (s_, sn, ss) = unsafe { src.open("src")? };
        let stream = match (ds, ss) {
            (Some(a), Some(b)) if !Arc::ptr_eq(a, b) => {
                return Err(AdError::Handle {
                    what: "stream",
                    why: "the dst and src handles were made for two streams".into(),
                });
            }
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => {
                return Err(AdError::Handle {
                    what: "dst",
                    why: "a copy between two slices has no stream: one side is a handle".into(),
                });
            }
        };
        if dn != sn {
            return Err(AdError::Rule(Error::LengthMismatch {
                what: "the copy's destination (the source's length)".into(),
                expected: sn,
                found: dn,
            }));
        }
        if d == s_ {
            // The same buffer on both sides: the identity.
            return Ok(());
        }
        let bytes = dn * size_of::<T>();
        // SAFETY: `dn` elements at each side (handles of borrowed buffers, slices of their
        // lengths), which cannot overlap but for the same handle on both sides (above).
        let copied = unsafe { sys::cuMemcpyAsync(d, s_, bytes, stream.cu_stream()) }.result();
        finish(stream, copied)
    });
}

/// The stream waited for (the copy is finished with borrowed host memory, and nothing of it
/// outlives the call), the first error kept.
fn finish(s: &CudaStream, r: Result<(), cudarc::driver::DriverError>) -> Result<(), AdError> {
    let waited = s.synchronize();
    r.and(waited).map_err(|e| AdError::Rule(Error::primal(e)))
}

/// A data type's bridge: the primal alone, registered with Enzyme as an inactive function that
/// frees nothing (`__enzyme_inactivefn`, `__enzyme_nofree`): Enzyme runs it where the primal
/// runs (the forward sweep, forward mode) and never looks into it or asks for a derivative.
macro_rules! data_bridges {
    ($sym:expr, $label:literal, fn $primal:ident ($($a:ident : $ty:ty),*), $dst:expr, $src:expr) => {
        #[unsafe(export_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym))]
        #[inline(never)]
        pub(in crate::autodiff::raw) unsafe extern "C" fn $primal($($a: $ty),*) {
            // SAFETY: the arguments come from the safe function's references.
            unsafe { data_copy($label, Bridge::Primal, $dst, $src) }
        }
        const _: () = {
            #[unsafe(export_name = concat!("__enzyme_inactivefn_rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym))]
            #[used]
            static INACTIVE: Registration<1> = Registration([$primal as *const ()]);
            #[unsafe(export_name = concat!("__enzyme_nofree_rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym))]
            #[used]
            static NOFREE: Registration<1> = Registration([$primal as *const ()]);
        };
    };
}

/// The data bridges of one element type, and its [`super::ready::Bridged`] implementation.
macro_rules! data_element {
    ($t:ident, $m:ident) => {
        pub(super) mod $m {
            use super::*;
            type T = $t;

            data_bridges!(concat!("memcpy_", stringify!($t)), "memcpy",
                fn memcpy (dst: *const AdBuf<T>, src: *const AdBuf<T>),
                DataSide::Handle(dst), Some(DataSide::Handle(src)));
            data_bridges!(concat!("memcpy_htod_", stringify!($t)), "memcpy_htod",
                fn htod (dst: *const AdBuf<T>, src: *mut T, n: usize),
                DataSide::Handle(dst), Some(DataSide::Slice(src, n)));
            data_bridges!(concat!("memcpy_dtoh_", stringify!($t)), "memcpy_dtoh",
                fn dtoh (dst: *mut T, n: usize, src: *const AdBuf<T>),
                DataSide::Slice(dst, n), Some(DataSide::Handle(src)));
            data_bridges!(concat!("memset_zeros_", stringify!($t)), "memset_zeros",
                fn zeros (dst: *const AdBuf<T>), DataSide::Handle(dst), None);

            super::super::ready::impl_bridged!();
        }
    };
}

data_element!(u8, for_u8);
data_element!(i8, for_i8);
data_element!(u16, for_u16);
data_element!(i16, for_i16);
data_element!(u32, for_u32);
data_element!(i32, for_i32);
data_element!(u64, for_u64);
data_element!(i64, for_i64);
