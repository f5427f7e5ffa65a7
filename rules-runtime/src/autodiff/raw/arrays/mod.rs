//! The bridges of rules with a CUDA array side (`copy`, `copy2d`, `copy3d` to, from or between
//! arrays, and a `memset` or `fill` of an array). Those rules take references, not pointers: an
//! array is an opaque driver handle that only the driver's copies reach, so its shadow is another
//! array, and Enzyme can pass neither as memory. So an array reaches the bridge as an
//! [`AdArray`] handle, made outside the differentiated function by [`AdArrayPair::new`] from the
//! array and its shadow array; its linear side as an [`AdBuf`] handle of any memory kind (for a
//! rule that takes a `RawShadow<T>`, or is generic over a `Linear` buffer: the bridge passes a
//! `RawShadow<T>`), or as a pageable host slice (a rule that takes `&[T]` / `&mut [T]`).
//!
//! Here each side becomes the references the rule object's safe methods take: every box is then
//! checked by the rule itself (a reference knows its length, an array its extent), as for any
//! call of it. What the bridge adds: the handles' roles and pairing (a shadow slot that holds its
//! primal is `Const`; a destination `Const` with an active source is refused), one array never on
//! both sides (a `&mut` and a `&` of one array), no bridge inside another on one thread (the
//! references it holds would alias), the stream from the primal handles, refused while capturing.

mod bridge;
mod fill;
pub(super) mod rules;

pub(in crate::autodiff::raw) use bridge::Entered;
pub use bridge::{array_aug, array_fwd, array_primal, array_rev};
pub use fill::{array_fill_aug, array_fill_fwd, array_fill_primal, array_fill_rev};
pub use rules::{RefFill, RefMemset, RefRegion};

use super::{AdBuf, PRIMAL, SHADOW, kind_of};
use crate::autodiff::AdError;
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::array::{ArrayElement, CudaArray};
use crate::memory::raw::RawShadow;
use cudarc::driver::CudaStream;
use std::borrow::{Borrow, BorrowMut};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

/// A CUDA array of a differentiated function, as Enzyme sees it: the array, its partner (the
/// primal's shadow array, or the shadow's primal) and, for the primal, the stream its pair was
/// made for. Made only by [`AdArrayPair::new`], which borrows both arrays for as long as the pair
/// lives; reached only through the pair ([`AdArrayPair::split`]).
///
/// Pass the primal as a `Duplicated` argument of the `#[autodiff_reverse]` function and the
/// shadow as its shadow; inside, hand `&AdArray` to the rule's `*_ad` function.
#[repr(C)]
pub struct AdArray<T: ArrayElement> {
    arr: *mut CudaArray<T>,
    partner: *mut CudaArray<T>,
    stream: *const Arc<CudaStream>,
    /// The array's extent, kept here: a shadow handle moved into another pair by `mem::swap`
    /// (`split` gives it as `&mut`) can outlive its arrays, and a rule can reach a handle of the
    /// array it holds as `&mut` (an `&AdArray` argument), so no method reads the array.
    extent: [usize; 3],
    role: u32,
}

impl<T: ArrayElement> AdArray<T> {
    /// Width, height and depth in elements (of the array when its pair was made).
    pub fn extent(&self) -> (usize, usize, usize) {
        let [w, h, d] = self.extent;
        (w, h, d)
    }
}

/// An array and its shadow array, borrowed for `'a`, as two handles for a differentiated
/// function. The rules order their work by the arrays' own events, as every array call does;
/// each bridge also waits for its stream before it returns.
pub struct AdArrayPair<'a, T: ArrayElement> {
    primal: AdArray<T>,
    shadow: AdArray<T>,
    _borrow: PhantomData<&'a mut CudaArray<T>>,
}

impl<'a, T: ArrayElement> AdArrayPair<'a, T> {
    /// Handles for `primal` and its `shadow`, arrays of one extent in the context of `stream`,
    /// for rules whose work is ordered on `stream`.
    ///
    /// Returns [`Error::BadRegion`] for two extents and [`Error::ContextMismatch`] for an array
    /// of another context.
    pub fn new(
        primal: &'a mut CudaArray<T>,
        shadow: &'a mut CudaArray<T>,
        stream: &'a Arc<CudaStream>,
    ) -> Result<Self> {
        if primal.extent() != shadow.extent() {
            return Err(Error::BadRegion {
                what: "the shadow of the AdArrayPair's array".into(),
                why: format!(
                    "its extent is {:?}, the array's {:?}",
                    shadow.extent(),
                    primal.extent()
                ),
            });
        }
        for (what, a) in [
            ("the AdArrayPair's array", &*primal),
            ("its shadow", &*shadow),
        ] {
            if a.context().cu_ctx() != stream.context().cu_ctx() {
                return Err(Error::ContextMismatch {
                    what: what.into(),
                    expected: stream.context().ordinal(),
                    found: a.context().ordinal(),
                });
            }
        }
        let (w, h, d) = primal.extent();
        let extent = [w, h, d];
        let (p, s) = (core::ptr::from_mut(primal), core::ptr::from_mut(shadow));
        Ok(AdArrayPair {
            primal: AdArray {
                arr: p,
                partner: s,
                stream: core::ptr::from_ref(stream),
                extent,
                role: PRIMAL,
            },
            // No stream on the shadow, as `AdPair`'s: the bridges read it from primals only.
            shadow: AdArray {
                arr: s,
                partner: p,
                stream: core::ptr::null(),
                extent,
                role: SHADOW,
            },
            _borrow: PhantomData,
        })
    }

    /// The primal's handle and the shadow's, as an `#[autodiff_reverse]` function's
    /// `Duplicated` argument takes them.
    pub fn split(&mut self) -> (&AdArray<T>, &mut AdArray<T>) {
        (&self.primal, &mut self.shadow)
    }
}

/// How one buffer argument of an array rule reaches its bridge, and the references the rule
/// object takes from it.
///
/// # Safety
/// Implemented here only; the bridges trust `stream` and `ids`.
pub unsafe trait RefSide<'h> {
    /// The buffer type the rule takes a reference to.
    type Buf: ?Sized;
    /// A destination's primal, or any shadow: the buffer, writable.
    type Mut: BorrowMut<Self::Buf>;
    /// A source's primal: the buffer, read.
    type Shared: Borrow<Self::Buf>;
    /// The stream of the primal handle, if the side is one.
    ///
    /// # Safety
    /// As `RefSide::open_mut`.
    unsafe fn stream(&self) -> Option<&'h Arc<CudaStream>>;
    /// The arrays the side would hand out (null for none), to refuse one array on both sides.
    ///
    /// # Safety
    /// As `RefSide::open_mut` (an array side reads its handles).
    unsafe fn ids(&self) -> [*const c_void; 2];
    /// The primal, writable, and the shadow when active (`None`: the shadow slot holds the
    /// primal, Enzyme's inactive argument).
    ///
    /// # Safety
    /// The side's pointers are the bridge's arguments: handles live for `'h` (the safe `*_ad`
    /// function passes references, Enzyme their shadows); a slice valid for its length, its
    /// shadow slot for as many elements; nothing else uses them meanwhile.
    unsafe fn open_mut(self, what: &'static str)
    -> Result<(Self::Mut, Option<Self::Mut>), AdError>;
    /// The primal, read, and the shadow when active.
    ///
    /// # Safety
    /// As `RefSide::open_mut`.
    unsafe fn open_shared(
        self,
        what: &'static str,
    ) -> Result<(Self::Shared, Option<Self::Mut>), AdError>;
}

/// A CUDA array: its handle and the handle in its shadow slot.
pub struct ArraySide<T: ArrayElement>(pub *const AdArray<T>, pub *const AdArray<T>);

/// Linear memory of any kind given as an [`AdBuf`] handle: the rule gets a `RawShadow<T>`.
pub struct BufSide<T>(pub *const AdBuf<T>, pub *const AdBuf<T>);

/// A pageable host slice: its pointer and length, and the pointer in its shadow slot.
pub struct SliceSide<T>(pub *mut T, pub usize, pub *mut T);

fn handle_error(what: &'static str, why: impl Into<String>) -> AdError {
    AdError::Handle {
        what,
        why: why.into(),
    }
}

const NOT_PAIRED: &str = "the shadow slot holds a handle that is not this buffer's shadow (pass \
                          the two handles of one pair)";

impl<T: ArrayElement> ArraySide<T> {
    /// The primal array and, when active, its shadow array, checked.
    ///
    /// # Safety
    /// As `RefSide::open_mut`.
    unsafe fn arrays(
        &self,
        what: &'static str,
    ) -> Result<(*mut CudaArray<T>, Option<*mut CudaArray<T>>), AdError> {
        // SAFETY: live handles, by the contract.
        let (p, d) = unsafe { (&*self.0, &*self.1) };
        if p.role != PRIMAL {
            return Err(handle_error(
                what,
                "expected an array's primal handle, got its shadow's",
            ));
        }
        if core::ptr::eq(self.0, self.1) {
            return Ok((p.arr, None));
        }
        if d.role != SHADOW || d.arr != p.partner || d.partner != p.arr {
            return Err(handle_error(what, NOT_PAIRED));
        }
        Ok((p.arr, Some(d.arr)))
    }
}

// SAFETY: `stream` reads a primal handle's; `ids` are the arrays the side opens.
unsafe impl<'h, T: ArrayElement> RefSide<'h> for ArraySide<T> {
    type Buf = CudaArray<T>;
    type Mut = &'h mut CudaArray<T>;
    type Shared = &'h CudaArray<T>;
    unsafe fn stream(&self) -> Option<&'h Arc<CudaStream>> {
        // SAFETY: a live handle; a primal's stream is the pair's, which outlives the call.
        let p = unsafe { &*self.0 };
        (p.role == PRIMAL && !p.stream.is_null()).then(|| unsafe { &*p.stream })
    }
    unsafe fn ids(&self) -> [*const c_void; 2] {
        // SAFETY: live handles, by the contract; only their pointers are read (roles are
        // checked when opened).
        let (p, d) = unsafe { (&*self.0, &*self.1) };
        [p.arr.cast_const().cast(), d.arr.cast_const().cast()]
    }
    unsafe fn open_mut(
        self,
        what: &'static str,
    ) -> Result<(Self::Mut, Option<Self::Mut>), AdError> {
        // SAFETY: the contract; the pair borrows both arrays mutably for longer than the call,
        // and the bridges refuse one array on both sides and a bridge inside another.
        unsafe {
            let (p, d) = self.arrays(what)?;
            Ok((&mut *p, d.map(|d| &mut *d)))
        }
    }
    unsafe fn open_shared(
        self,
        what: &'static str,
    ) -> Result<(Self::Shared, Option<Self::Mut>), AdError> {
        // SAFETY: as `open_mut`.
        unsafe {
            let (p, d) = self.arrays(what)?;
            Ok((&*p, d.map(|d| &mut *d)))
        }
    }
}

impl<T: Differentiable> BufSide<T> {
    /// The primal and, when active, its shadow as raw shadows of the handles' kind.
    ///
    /// # Safety
    /// As `RefSide::open_mut`.
    unsafe fn raw(
        &self,
        what: &'static str,
    ) -> Result<(RawShadow<T>, Option<RawShadow<T>>), AdError> {
        // SAFETY: live handles, by the contract.
        let (p, d) = unsafe { (&*self.0, &*self.1) };
        if p.role != PRIMAL {
            return Err(handle_error(
                what,
                format!(
                    "expected a primal handle, got the shadow handle of {:?} memory",
                    p.kind()
                ),
            ));
        }
        let kind = kind_of(p.kind);
        // SAFETY: an `AdPair` made the handles from buffers of `len` elements of `kind` that it
        // borrows mutably (its guards order their earlier work before the pair's stream).
        let raw = |ptr| unsafe { RawShadow::new(kind, ptr, 0, p.len, what) }.map_err(AdError::Rule);
        if core::ptr::eq(self.0, self.1) {
            return Ok((raw(p.ptr)?, None));
        }
        if !d.is_shadow_of(p) {
            return Err(handle_error(what, NOT_PAIRED));
        }
        Ok((raw(p.ptr)?, Some(raw(d.ptr)?)))
    }
}

// SAFETY: as `ArraySide`'s; a linear side opens no array.
unsafe impl<'h, T: Differentiable> RefSide<'h> for BufSide<T> {
    type Buf = RawShadow<T>;
    type Mut = RawShadow<T>;
    type Shared = RawShadow<T>;
    unsafe fn stream(&self) -> Option<&'h Arc<CudaStream>> {
        // SAFETY: as `ArraySide::stream`.
        let p = unsafe { &*self.0 };
        (p.role == PRIMAL && !p.stream.is_null()).then(|| unsafe { &*p.stream })
    }
    unsafe fn ids(&self) -> [*const c_void; 2] {
        [core::ptr::null(); 2]
    }
    unsafe fn open_mut(
        self,
        what: &'static str,
    ) -> Result<(Self::Mut, Option<Self::Mut>), AdError> {
        // SAFETY: the contract.
        unsafe { self.raw(what) }
    }
    unsafe fn open_shared(
        self,
        what: &'static str,
    ) -> Result<(Self::Shared, Option<Self::Mut>), AdError> {
        // SAFETY: the contract.
        unsafe { self.raw(what) }
    }
}

// SAFETY: as `ArraySide`'s; a slice carries no stream and opens no array.
unsafe impl<'h, T: Differentiable> RefSide<'h> for SliceSide<T> {
    type Buf = [T];
    type Mut = &'h mut [T];
    type Shared = &'h [T];
    unsafe fn stream(&self) -> Option<&'h Arc<CudaStream>> {
        None
    }
    unsafe fn ids(&self) -> [*const c_void; 2] {
        [core::ptr::null(); 2]
    }
    unsafe fn open_mut(self, _: &'static str) -> Result<(Self::Mut, Option<Self::Mut>), AdError> {
        let SliceSide(p, n, d) = self;
        // SAFETY: the contract (the safe function passes a `&mut [T]`'s pointer and length;
        // Enzyme's shadow of it has as many elements).
        unsafe {
            let shadow = (d != p).then(|| core::slice::from_raw_parts_mut(d, n));
            Ok((core::slice::from_raw_parts_mut(p, n), shadow))
        }
    }
    unsafe fn open_shared(
        self,
        _: &'static str,
    ) -> Result<(Self::Shared, Option<Self::Mut>), AdError> {
        let SliceSide(p, n, d) = self;
        // SAFETY: as `open_mut`; the primal only read (the safe function passes a `&[T]`).
        unsafe {
            let shadow = (d != p).then(|| core::slice::from_raw_parts_mut(d, n));
            Ok((core::slice::from_raw_parts(p, n), shadow))
        }
    }
}
