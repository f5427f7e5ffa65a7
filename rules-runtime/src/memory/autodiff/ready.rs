//! The core of the ready-made bridged copies ([`crate::autodiff::copies`]): cudarc's copies and
//! its memset as rule objects whose memory kinds come from the call's own handles (any linear
//! kind), and their `extern "C"` bridges, one set per element type, registered with Enzyme here,
//! once, under symbols that carry this crate's version (two versions in one binary each keep
//! their own).
//!
//! Every bridge goes through the same [`super::bridge`] functions as a generated one: the handles'
//! roles, pairing, stream and lengths are checked there, the boxes by the rule object, before the
//! driver is called.

use super::bridge::{Side, Streams, bridge_aug, bridge_fwd, bridge_primal, bridge_rev};
use super::rules::{Linear, Memset, Region};
use super::{AdBuf, Registration};
use crate::autodiff::AdError;
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use crate::memory::linear::{End, memcpy3d};
use crate::ops::On;
use crate::region::Pitched;
use crate::rules::{PtrCopy, RawCopyRule, RawMemsetRule, RawRegion, RawRegionRule};
use cudarc::driver::CudaStream;
use cudarc::driver::sys::{self, CUmemorytype};
use std::ffi::c_void;
use std::sync::Arc;

/// Where a ready-made copy runs: on the handles' stream (the driver's copy), or, for pageable
/// host memory on both sides and no stream, on the host.
#[derive(Clone, Copy)]
pub struct Place<'s>(Option<&'s Arc<CudaStream>>);

impl<'s> Place<'s> {
    /// The stream of the call's handles, or the host when every side is pageable host memory
    /// (`AdPair::new_host`); other memory needs the stream its pair was made with.
    fn of(s: Streams<'s>, kinds: &[MemoryKind]) -> Result<Self, AdError> {
        match s.get() {
            Ok(st) => Ok(Place(Some(st))),
            Err(_) if kinds.iter().all(|k| *k == MemoryKind::Host) => Ok(Place(None)),
            Err(e) => Err(e),
        }
    }

    fn on(self) -> On<'s> {
        match self.0 {
            Some(s) => On::stream(&**s),
            None => On::Host,
        }
    }

    /// Waits for the stream when a side is host memory (pageable or pinned), so that the copy
    /// has finished with it when the primitive returns, as cudarc's copies to host memory do.
    fn finish(self, kinds: [MemoryKind; 2]) -> Result<()> {
        match self.0 {
            Some(s)
                if kinds
                    .iter()
                    .any(|k| matches!(k, MemoryKind::Host | MemoryKind::Pinned)) =>
            {
                s.synchronize().map_err(Error::primal)
            }
            _ => Ok(()),
        }
    }
}

/// The driver's memory type of a linear kind.
fn memory_type(kind: MemoryKind) -> CUmemorytype {
    match kind {
        MemoryKind::Device => CUmemorytype::CU_MEMORYTYPE_DEVICE,
        MemoryKind::Unified => CUmemorytype::CU_MEMORYTYPE_UNIFIED,
        _ => CUmemorytype::CU_MEMORYTYPE_HOST,
    }
}

/// `dst ← src`, `n` elements, between linear memory of any kinds: `cuMemcpyAsync` (the driver
/// tells the kinds from the addresses), or a host copy.
pub struct Copy<'s> {
    place: Place<'s>,
    kinds: [MemoryKind; 2],
    n: usize,
}

// SAFETY: the plan is the call's: offset 0 and `n` elements on each side, in the kinds the
// handles declare; the primitive writes exactly those `n` elements of `dst` and reads `n` of `src`.
unsafe impl<'s, T: Differentiable> RawCopyRule<'s, T> for Copy<'s> {
    fn __plan(&self) -> (On<'s>, PtrCopy) {
        let [dst_kind, src_kind] = self.kinds;
        let shape = PtrCopy {
            dst_kind,
            src_kind,
            dst_offset: 0,
            src_offset: 0,
            n: self.n,
        };
        (self.place.on(), shape)
    }
    unsafe fn __primal(&mut self, dst: *mut T, src: *const T) -> Result<()> {
        match self.place.0 {
            // SAFETY: `n` elements at each, valid in their kinds (the trait's contract); an exact
            // self-copy never reaches the primitive, and a partial overlap is refused before.
            None => unsafe { core::ptr::copy_nonoverlapping(src, dst, self.n) },
            Some(s) => {
                let bytes = self.n * size_of::<T>();
                // SAFETY: as above, on the handles' stream.
                unsafe { sys::cuMemcpyAsync(dst as u64, src as u64, bytes, s.cu_stream()) }
                    .result()
                    .map_err(Error::primal)?;
            }
        }
        self.place.finish(self.kinds)
    }
}

/// `dst ← 0` bytewise, `n` elements of device or unified memory (`cuMemsetD8Async`, as cudarc's
/// `memset_zeros`), or of pageable host memory on the host.
pub struct Zero<'s> {
    place: Place<'s>,
    kind: MemoryKind,
    n: usize,
}

// SAFETY: the plan is the `n` elements from offset 0 that the primitive sets.
unsafe impl<'s, T: Differentiable> RawMemsetRule<'s, T> for Zero<'s> {
    fn __plan(&self) -> (On<'s>, RawRegion, bool) {
        let shape = RawRegion {
            dst_kind: self.kind,
            src_kind: self.kind,
            dst: Pitched::linear::<T>(0, self.n),
            src: None,
        };
        (self.place.on(), shape, false)
    }
    unsafe fn __primal(&mut self, dst: *mut T) -> Result<()> {
        match self.place.0 {
            // SAFETY: `n` elements, valid for writes (the trait's contract); every element type
            // here is valid as zero bits.
            None => unsafe { core::ptr::write_bytes(dst, 0, self.n) },
            Some(s) => {
                let bytes = self.n * size_of::<T>();
                // SAFETY: as above, device-reachable memory on the handles' stream.
                unsafe { sys::cuMemsetD8Async(dst as u64, 0, bytes, s.cu_stream()) }
                    .result()
                    .map_err(Error::primal)?;
            }
        }
        Ok(())
    }
}

/// A pitched box, `dst[box] ← src[box]` (2D: depth 1), between linear memory of any kinds:
/// `cuMemcpy3DAsync`, or row by row on the host.
pub struct Boxes<'s> {
    place: Place<'s>,
    kinds: [MemoryKind; 2],
    dst: Pitched,
    src: Pitched,
}

// SAFETY: the plan is the two boxes the primitive copies, rows only (never the padding).
unsafe impl<'s, T: Differentiable> RawRegionRule<'s, T> for Boxes<'s> {
    fn __plan(&self) -> (On<'s>, RawRegion, bool) {
        let shape = RawRegion {
            dst_kind: self.kinds[0],
            src_kind: self.kinds[1],
            dst: self.dst,
            src: Some(self.src),
        };
        (self.place.on(), shape, false)
    }
    unsafe fn __primal(&mut self, dst: *mut T, src: *const T) -> Result<()> {
        let (d, s) = (self.dst, self.src);
        let (w, h, depth) = d.shape();
        match self.place.0 {
            None => {
                let row = |b: Pitched, y: usize, z: usize| {
                    (z * b.slice_height + y) * (b.pitch / size_of::<T>())
                };
                for z in 0..depth {
                    for y in 0..h {
                        // SAFETY: the rows of both boxes, checked against the handles' lengths
                        // by the rule before the primitive runs (pitches are whole elements).
                        unsafe {
                            core::ptr::copy_nonoverlapping(
                                src.add(row(s, y, z)),
                                dst.add(row(d, y, z)),
                                w,
                            )
                        };
                    }
                }
            }
            Some(st) => {
                let end =
                    |k, p: u64, b: Pitched| End::Linear(memory_type(k), p, b.pitch, b.slice_height);
                let (dk, sk) = (self.kinds[0], self.kinds[1]);
                // SAFETY: both boxes checked against the handles (the trait's contract).
                unsafe {
                    memcpy3d(
                        st,
                        end(dk, dst as u64, d),
                        end(sk, src as u64, s),
                        size_of::<T>(),
                        (w, h, depth),
                    )
                }
                .map_err(Error::primal)?;
            }
        }
        self.place.finish(self.kinds)
    }
}

/// A handle's kind and length, for the rule object (read before the bridge checks the handle,
/// which refuses a wrong one).
///
/// # Safety
/// `h` points at a live handle.
unsafe fn meta<T>(h: *const AdBuf<T>) -> (MemoryKind, usize) {
    // SAFETY: the caller's contract.
    let h = unsafe { &*h };
    (h.kind(), h.len())
}

/// The rule object of a linear copy: the lengths must agree, as cudarc's copies ask.
fn copy<'s>(
    s: Streams<'s>,
    (dk, dn): (MemoryKind, usize),
    (sk, sn): (MemoryKind, usize),
) -> Result<Linear<Copy<'s>>, AdError> {
    if dn != sn {
        return Err(AdError::Rule(Error::LengthMismatch {
            what: "the copy's destination (the source's length)".into(),
            expected: sn,
            found: dn,
        }));
    }
    let place = Place::of(s, &[dk, sk])?;
    Ok(Linear(Copy {
        place,
        kinds: [dk, sk],
        n: dn,
    }))
}

/// The rule object of `memset_zeros`: device or unified memory (cudarc's), or pageable host
/// memory without a stream.
fn zero<'s>(s: Streams<'s>, (k, n): (MemoryKind, usize)) -> Result<Memset<Zero<'s>>, AdError> {
    let place = Place::of(s, &[k])?;
    let fits = match place.0 {
        Some(_) => matches!(k, MemoryKind::Device | MemoryKind::Unified),
        None => true,
    };
    if !fits {
        return Err(AdError::Handle {
            what: "dst",
            why: format!(
                "memset_zeros sets device or unified memory (as cudarc's), not {k:?} memory"
            ),
        });
    }
    Ok(Memset(Zero { place, kind: k, n }))
}

/// The rule object of a box copy: `(pitch, rows per slice)` of each side, `(width, height,
/// depth)` of the box.
fn boxes<'s>(
    s: Streams<'s>,
    kinds: [MemoryKind; 2],
    (dp, dr): (usize, usize),
    (sp, sr): (usize, usize),
    (w, h, d): (usize, usize, usize),
) -> Result<Region<Boxes<'s>>, AdError> {
    let place = Place::of(s, &kinds)?;
    Ok(Region(Boxes {
        place,
        kinds,
        dst: Pitched::slices(0, w, h, d, dp, dr),
        src: Pitched::slices(0, w, h, d, sp, sr),
    }))
}

/// The element types with ready-made bridges; sealed. Its methods are the safe bridged calls
/// [`crate::autodiff::copies`] makes.
pub trait Bridged: Differentiable + sealed::Sealed {
    #[doc(hidden)]
    fn __memcpy(dst: &AdBuf<Self>, src: &AdBuf<Self>);
    #[doc(hidden)]
    fn __memcpy_htod(dst: &AdBuf<Self>, src: &[Self]);
    #[doc(hidden)]
    fn __memcpy_dtoh(dst: &mut [Self], src: &AdBuf<Self>);
    #[doc(hidden)]
    fn __memset_zeros(dst: &AdBuf<Self>);
    #[doc(hidden)]
    fn __memcpy_3d(
        dst: &AdBuf<Self>,
        dp: (usize, usize),
        src: &AdBuf<Self>,
        sp: (usize, usize),
        shape: (usize, usize, usize),
    );
    #[doc(hidden)]
    fn __memcpy_3d_htod(
        dst: &AdBuf<Self>,
        dp: (usize, usize),
        src: &[Self],
        sp: (usize, usize),
        shape: (usize, usize, usize),
    );
    #[doc(hidden)]
    fn __memcpy_3d_dtoh(
        dst: &mut [Self],
        dp: (usize, usize),
        src: &AdBuf<Self>,
        sp: (usize, usize),
        shape: (usize, usize, usize),
    );
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// One operation's four bridges and two registrations, for one element type: the primal (with
/// its parameters), the rule object from the stream, and the sides from the C arguments (Enzyme's
/// shadow slots; for the primal, the primals themselves: `Const`).
macro_rules! bridges {
    (
        $sym:expr, $label:literal,
        fn $primal:ident / $aug:ident / $rev:ident / $fwd:ident ($($a:ident / $d:ident : $ty:ty),*),
        |$st:ident| $make:expr,
        sides: $dst:expr, $src:expr;
        primal sides: $dstp:expr, $srcp:expr;
    ) => {
        #[unsafe(export_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym))]
        #[inline(never)]
        #[allow(unused_variables, clippy::too_many_arguments)]
        pub(in crate::memory::autodiff) unsafe extern "C" fn $primal($($a: $ty),*) {
            // One call, never inlined here: Enzyme prints the primal's IR with its "Massaging"
            // warning, a few lines instead of the bridge's.
            #[inline(never)]
            #[allow(unused_variables, clippy::too_many_arguments)]
        unsafe extern "C" fn body($($a: $ty),*) {
                // SAFETY: the arguments come from the safe function's references: live handles,
                // slices valid for their lengths.
                unsafe { bridge_primal($label, |$st| $make, $dstp, $srcp) }
            }
            // SAFETY: as above.
            unsafe { body($($a),*) }
        }

        #[unsafe(export_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym, "_aug"))]
        #[allow(unused_variables, clippy::too_many_arguments)]
        pub(in crate::memory::autodiff) unsafe extern "C" fn $aug($($a: $ty, $d: $ty),*) -> *mut c_void {
            #[inline(never)]
            #[allow(unused_variables, clippy::too_many_arguments)]
        unsafe extern "C" fn body($($a: $ty, $d: $ty),*) -> *mut c_void {
                // SAFETY: Enzyme passes the primal's arguments and their shadows.
                unsafe { bridge_aug($label, |$st| $make, $dst, $src) }
            }
            // SAFETY: as above.
            unsafe { body($($a, $d),*) }
        }

        #[unsafe(export_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym, "_rev"))]
        #[allow(unused_variables, clippy::too_many_arguments)]
        pub(in crate::memory::autodiff) unsafe extern "C" fn $rev($($a: $ty, $d: $ty,)* tape: *mut c_void) {
            // SAFETY: as the augmented primal's; the tape is the one it returned.
            unsafe { bridge_rev($label, |$st| $make, $dst, $src, tape) }
        }

        #[unsafe(export_name = concat!("rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym, "_fwd"))]
        #[allow(unused_variables, clippy::too_many_arguments)]
        pub(in crate::memory::autodiff) unsafe extern "C" fn $fwd($($a: $ty, $d: $ty),*) {
            // SAFETY: as the augmented primal's.
            unsafe { bridge_fwd($label, |$st| $make, $dst, $src) }
        }

        const _: () = {
            #[unsafe(export_name = concat!("__enzyme_register_gradient_rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym))]
            #[used]
            static GRADIENT: Registration<3> =
                Registration([$primal as *const (), $aug as *const (), $rev as *const ()]);
            #[unsafe(export_name = concat!("__enzyme_register_derivative_rules_runtime_v", env!("CARGO_PKG_VERSION"), "::", $sym))]
            #[used]
            static DERIVATIVE: Registration<2> =
                Registration([$primal as *const (), $fwd as *const ()]);
        };
    };
}

/// Every operation's bridges for one element type, and its [`Bridged`] implementation. (In the
/// expressions, `meta` reads a handle the bridge's contract keeps live.)
macro_rules! element {
    ($t:ident, $m:ident) => {
        pub(super) mod $m {
            use super::*;
            type T = $t;
            const HOST: MemoryKind = MemoryKind::Host;

            bridges! {
                concat!("memcpy_", stringify!($t)), "memcpy",
                fn memcpy / memcpy_aug / memcpy_rev / memcpy_fwd
                    (dst / d_dst: *const AdBuf<T>, src / d_src: *const AdBuf<T>),
                |st| copy(st, meta(dst), meta(src)),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Handle(src, d_src, meta(src).0);
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Handle(src, src, meta(src).0);
            }

            bridges! {
                concat!("memcpy_htod_", stringify!($t)), "memcpy_htod",
                fn htod / htod_aug / htod_rev / htod_fwd
                    (dst / d_dst: *const AdBuf<T>, src / d_src: *mut T, n / d_n: usize),
                |st| copy(st, meta(dst), (HOST, n)),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Slice(src, n, d_src);
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Slice(src, n, src);
            }

            bridges! {
                concat!("memcpy_dtoh_", stringify!($t)), "memcpy_dtoh",
                fn dtoh / dtoh_aug / dtoh_rev / dtoh_fwd
                    (dst / d_dst: *mut T, n / d_n: usize, src / d_src: *const AdBuf<T>),
                |st| copy(st, (HOST, n), meta(src)),
                sides: Side::Slice(dst, n, d_dst), Side::Handle(src, d_src, meta(src).0);
                primal sides: Side::Slice(dst, n, dst), Side::Handle(src, src, meta(src).0);
            }

            bridges! {
                concat!("memset_zeros_", stringify!($t)), "memset_zeros",
                fn zeros / zeros_aug / zeros_rev / zeros_fwd (dst / d_dst: *const AdBuf<T>),
                |st| zero(st, meta(dst)),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Absent;
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Absent;
            }

            bridges! {
                concat!("memcpy_3d_", stringify!($t)), "memcpy_3d",
                fn box3 / box3_aug / box3_rev / box3_fwd
                    (dst / d_dst: *const AdBuf<T>, dp / d_dp: usize, dr / d_dr: usize,
                     src / d_src: *const AdBuf<T>, sp / d_sp: usize, sr / d_sr: usize,
                     w / d_w: usize, h / d_h: usize, depth / d_depth: usize),
                |st| boxes(st, [meta(dst).0, meta(src).0], (dp, dr), (sp, sr), (w, h, depth)),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Handle(src, d_src, meta(src).0);
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Handle(src, src, meta(src).0);
            }

            bridges! {
                concat!("memcpy_3d_htod_", stringify!($t)), "memcpy_3d_htod",
                fn box3_htod / box3_htod_aug / box3_htod_rev / box3_htod_fwd
                    (dst / d_dst: *const AdBuf<T>, dp / d_dp: usize, dr / d_dr: usize,
                     src / d_src: *mut T, n / d_n: usize, sp / d_sp: usize, sr / d_sr: usize,
                     w / d_w: usize, h / d_h: usize, depth / d_depth: usize),
                |st| boxes(st, [meta(dst).0, HOST], (dp, dr), (sp, sr), (w, h, depth)),
                sides: Side::Handle(dst, d_dst, meta(dst).0), Side::Slice(src, n, d_src);
                primal sides: Side::Handle(dst, dst, meta(dst).0), Side::Slice(src, n, src);
            }

            bridges! {
                concat!("memcpy_3d_dtoh_", stringify!($t)), "memcpy_3d_dtoh",
                fn box3_dtoh / box3_dtoh_aug / box3_dtoh_rev / box3_dtoh_fwd
                    (dst / d_dst: *mut T, n / d_n: usize, dp / d_dp: usize, dr / d_dr: usize,
                     src / d_src: *const AdBuf<T>, sp / d_sp: usize, sr / d_sr: usize,
                     w / d_w: usize, h / d_h: usize, depth / d_depth: usize),
                |st| boxes(st, [HOST, meta(src).0], (dp, dr), (sp, sr), (w, h, depth)),
                sides: Side::Slice(dst, n, d_dst), Side::Handle(src, d_src, meta(src).0);
                primal sides: Side::Slice(dst, n, dst), Side::Handle(src, src, meta(src).0);
            }

            // SAFETY (each call): the pointers and lengths come from the references, held for
            // the call; the bridges check the handles and the boxes before any use.
            impl Bridged for T {
                fn __memcpy(dst: &AdBuf<T>, src: &AdBuf<T>) {
                    unsafe { memcpy(dst, src) }
                }
                fn __memcpy_htod(dst: &AdBuf<T>, src: &[T]) {
                    unsafe { htod(dst, src.as_ptr().cast_mut(), src.len()) }
                }
                fn __memcpy_dtoh(dst: &mut [T], src: &AdBuf<T>) {
                    unsafe { dtoh(dst.as_mut_ptr(), dst.len(), src) }
                }
                fn __memset_zeros(dst: &AdBuf<T>) {
                    unsafe { zeros(dst) }
                }
                fn __memcpy_3d(dst: &AdBuf<T>, (dp, dr): (usize, usize), src: &AdBuf<T>, (sp, sr): (usize, usize), (w, h, d): (usize, usize, usize)) {
                    unsafe { box3(dst, dp, dr, src, sp, sr, w, h, d) }
                }
                fn __memcpy_3d_htod(dst: &AdBuf<T>, (dp, dr): (usize, usize), src: &[T], (sp, sr): (usize, usize), (w, h, d): (usize, usize, usize)) {
                    unsafe { box3_htod(dst, dp, dr, src.as_ptr().cast_mut(), src.len(), sp, sr, w, h, d) }
                }
                fn __memcpy_3d_dtoh(dst: &mut [T], (dp, dr): (usize, usize), src: &AdBuf<T>, (sp, sr): (usize, usize), (w, h, d): (usize, usize, usize)) {
                    unsafe { box3_dtoh(dst.as_mut_ptr(), dst.len(), dp, dr, src, sp, sr, w, h, d) }
                }
            }
        }
    };
}

element!(f32, for_f32);
element!(f64, for_f64);
