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

use super::bridge::{Streams, UnwindWait, finished};
use super::{AdBuf, PRIMAL, SHADOW, kind_of};
use crate::activity::{Active, Const, Dual, Duplicated};
use crate::autodiff::{AdError, Bridge, record};
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::array::{ArrayElement, CudaArray};
use crate::memory::raw::RawShadow;
use crate::memory::{ShadowMemory, ShadowRead};
use crate::rules::{FillRule, MemsetRule, RegionRule, RegionTape};
use cudarc::driver::CudaStream;
use std::borrow::{Borrow, BorrowMut};
use std::cell::Cell;
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
    fn ids(&self) -> [*const c_void; 2];
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
    fn ids(&self) -> [*const c_void; 2] {
        // SAFETY: `ids` is called by the bridges on their own arguments only (the contract of
        // `open_mut`, under which they run); roles are checked when opened.
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
        if d.role != SHADOW || d.ptr != p.partner || d.partner != p.ptr {
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
    fn ids(&self) -> [*const c_void; 2] {
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
    fn ids(&self) -> [*const c_void; 2] {
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

/// A destination as the rule takes it: both (`Duplicated`), or the primal alone (`Const`).
pub enum DstAct<'a, X: ?Sized> {
    /// Active.
    Dup(&'a mut X, &'a mut X),
    /// Inactive.
    Const(&'a mut X),
}

/// A source as the rule takes it.
pub enum SrcAct<'a, Y: ?Sized> {
    /// Active.
    Dup(&'a Y, &'a mut Y),
    /// Inactive.
    Const(&'a Y),
}

/// A rule object on references with an array side, as the bridges drive it: a two-buffer region
/// rule ([`RefRegion`]) or a memset ([`RefMemset`]; no source). Implemented here only.
pub trait AdRefRule<'s, X: ?Sized, Y: ?Sized> {
    /// What the augmented primal hands to the reverse.
    type Tape;
    /// Whether the rule has a source.
    const SOURCE: bool;
    /// The rule's forward rule (`src` is `None` exactly when the rule has no source).
    fn fwd(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<()>;
    /// The rule's augmented primal.
    fn aug(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<Self::Tape>;
    /// The rule's reverse, with the tape of [`AdRefRule::aug`].
    fn rev(
        &mut self,
        tape: Self::Tape,
        dst: DstAct<'_, X>,
        src: Option<SrcAct<'_, Y>>,
    ) -> Result<()>;
}

/// A two-buffer region rule on references (`RegionRule`): a copy to, from or between arrays.
pub struct RefRegion<R>(pub R);

/// A memset of an array (`MemsetRule`).
pub struct RefMemset<R>(pub R);

fn no_source() -> Error {
    Error::UnsupportedKinds {
        op: "a std::autodiff bridge",
        dst: crate::MemoryKind::Array,
        src: crate::MemoryKind::Array,
        why: "the rule's source is missing, or given to a rule that has none",
    }
}

/// Calls `$m` of a two-buffer rule on every activity pattern.
macro_rules! region_call {
    ($rule:expr, $m:ident($($tape:expr,)?) $dst:expr, $src:expr) => {
        match ($dst, $src) {
            (DstAct::Dup(d, dd), Some(SrcAct::Dup(s, ds))) => {
                $rule.$m($($tape,)? Duplicated::new(d, dd), Duplicated::new(s, ds))
            }
            (DstAct::Dup(d, dd), Some(SrcAct::Const(s))) => {
                $rule.$m($($tape,)? Duplicated::new(d, dd), Const(s))
            }
            (DstAct::Const(d), Some(SrcAct::Const(s))) => $rule.$m($($tape,)? Const(d), Const(s)),
            // Refused by the bridges before (`pattern`): the source's derivative would be lost.
            (DstAct::Const(_), Some(SrcAct::Dup(..))) | (_, None) => Err(no_source()),
        }
    };
}

impl<'s, X, Y, R> AdRefRule<'s, X, Y> for RefRegion<R>
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
    R: RegionRule<'s, X, Y>,
{
    type Tape = RegionTape<X::Elem>;
    const SOURCE: bool = true;
    fn fwd(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<()> {
        region_call!(self.0, forward() dst, src)
    }
    fn aug(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<Self::Tape> {
        region_call!(self.0, augmented_primal() dst, src)
    }
    fn rev(
        &mut self,
        tape: Self::Tape,
        dst: DstAct<'_, X>,
        src: Option<SrcAct<'_, Y>>,
    ) -> Result<()> {
        region_call!(self.0, reverse(tape,) dst, src)
    }
}

impl<'s, X, Y, R> AdRefRule<'s, X, Y> for RefMemset<R>
where
    X: ShadowMemory + ?Sized,
    Y: ?Sized,
    R: MemsetRule<'s, X>,
{
    type Tape = RegionTape<X::Elem>;
    const SOURCE: bool = false;
    fn fwd(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<()> {
        match (dst, src) {
            (_, Some(_)) => Err(no_source()),
            (DstAct::Dup(d, dd), None) => self.0.forward(Duplicated::new(d, dd)),
            (DstAct::Const(d), None) => self.0.forward(Const(d)),
        }
    }
    fn aug(&mut self, dst: DstAct<'_, X>, src: Option<SrcAct<'_, Y>>) -> Result<Self::Tape> {
        match (dst, src) {
            (_, Some(_)) => Err(no_source()),
            (DstAct::Dup(d, dd), None) => self.0.augmented_primal(Duplicated::new(d, dd)),
            (DstAct::Const(d), None) => self.0.augmented_primal(Const(d)),
        }
    }
    fn rev(
        &mut self,
        tape: Self::Tape,
        dst: DstAct<'_, X>,
        src: Option<SrcAct<'_, Y>>,
    ) -> Result<()> {
        match (dst, src) {
            (_, Some(_)) => Err(no_source()),
            (DstAct::Dup(d, dd), None) => self.0.reverse(tape, Duplicated::new(d, dd)),
            (DstAct::Const(d), None) => self.0.reverse(tape, Const(d)),
        }
    }
}

thread_local! {
    /// Whether a bridge is running on this thread: a rule's primitive that reached a bridge
    /// again (through handles it was given, e.g. an `&AdBuf` argument) would open memory the
    /// outer rule holds (a second `&mut` of an array, or a pinned `RawShadow` read beside its
    /// `host_mut` slice). Taken by every bridge, pointer and fill bridges included.
    static IN_BRIDGE: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as inside a bridge until dropped; an error when it already was.
pub(super) struct Entered(PhantomData<*const ()>);

impl Entered {
    pub(super) fn new() -> Result<Self, AdError> {
        if IN_BRIDGE.with(|b| b.replace(true)) {
            return Err(AdError::Handle {
                what: "bridge",
                why: "called from inside another bridge's rule (its buffers are borrowed there)"
                    .into(),
            });
        }
        Ok(Entered(PhantomData))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        IN_BRIDGE.with(|b| b.set(false));
    }
}

/// The stream of the call's primal handles (an error when two disagree), refused while
/// capturing.
///
/// # Safety
/// As `RefSide::open_mut` for `dst` and `src`.
unsafe fn ref_streams<'h, D: RefSide<'h>, S: RefSide<'h>>(
    dst: &D,
    src: Option<&S>,
) -> Result<Streams<'h>, AdError> {
    // SAFETY: the contract.
    let (a, b) = unsafe { (dst.stream(), src.and_then(|s| s.stream())) };
    let found = match (a, b) {
        (Some(a), Some(b)) if !Arc::ptr_eq(a, b) => {
            return Err(handle_error(
                "stream",
                "the dst and src handles were made for two streams",
            ));
        }
        (a, b) => a.or(b),
    };
    Streams::checked(found)
}

/// What every array bridge does first: the re-entrance mark, one array never on both sides, the
/// rule object (with the handles' stream), then both sides opened.
///
/// # Safety
/// As `RefSide::open_mut` for `dst` and `src`.
#[allow(clippy::type_complexity)]
unsafe fn prepare<'h, D, S, R>(
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) -> Result<
    (
        Entered,
        Streams<'h>,
        R,
        (D::Mut, Option<D::Mut>),
        Option<(S::Shared, Option<S::Mut>)>,
    ),
    AdError,
>
where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    let entered = Entered::new()?;
    if R::SOURCE != src.is_some() {
        return Err(handle_error(
            "src",
            "the sides do not fit the rule (a memset has no source; a copy has both)",
        ));
    }
    if let Some(s) = &src {
        let (d, s) = (dst.ids(), s.ids());
        if d.iter().any(|a| !a.is_null() && s.contains(a)) {
            return Err(handle_error(
                "src",
                "the same CUDA array (or its shadow) is the destination: a copy within one \
                 array is not bridged",
            ));
        }
    }
    // SAFETY: the contract.
    let st = unsafe { ref_streams(&dst, src.as_ref())? };
    let rule = make(st)?;
    // SAFETY: the contract; the arrays are distinct (above) and no other bridge holds them.
    let (d, s) = unsafe {
        (
            dst.open_mut("dst")?,
            match src {
                Some(s) => Some(s.open_shared("src")?),
                None => None,
            },
        )
    };
    Ok((entered, st, rule, d, s))
}

/// A call's activities, and which sides are active (`[dst, src]`).
type Acts<'a, X, Y> = (DstAct<'a, X>, Option<SrcAct<'a, Y>>, [bool; 2]);

/// The activities, or the refusal of an inactive destination with an active source (its
/// derivative would be lost).
fn acts<'a, X: ?Sized, Y: ?Sized, DM, SS, SM>(
    d: &'a mut (DM, Option<DM>),
    s: &'a mut Option<(SS, Option<SM>)>,
) -> Result<Acts<'a, X, Y>, AdError>
where
    DM: BorrowMut<X>,
    SS: Borrow<Y>,
    SM: BorrowMut<Y>,
{
    let (dp, dd) = d;
    let dst = match dd {
        Some(dd) => DstAct::Dup(dp.borrow_mut(), dd.borrow_mut()),
        None => DstAct::Const(dp.borrow_mut()),
    };
    let src = s.as_mut().map(|(sp, sd)| match sd {
        Some(sd) => SrcAct::Dup((*sp).borrow(), sd.borrow_mut()),
        None => SrcAct::Const((*sp).borrow()),
    });
    let active = [
        matches!(dst, DstAct::Dup(..)),
        matches!(src, Some(SrcAct::Dup(..))),
    ];
    if active == [false, true] {
        return Err(AdError::InactiveDestination { what: "dst" });
    }
    Ok((dst, src, active))
}

/// The rule's forward rule on the activities the sides resolve to, recorded as bridge `which`:
/// the primal (every shadow slot holds its primal, so all `Const`: the call alone) and the
/// forward rule share it.
///
/// # Safety
/// As `RefSide::open_mut` for `dst` and `src`.
unsafe fn forward<'h, D, S, R>(
    (name, which): (&'static str, Bridge),
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    let _ = record((name, which), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, mut d, mut s) = unsafe { prepare(make, dst, src)? };
        let _unwind: UnwindWait<'_> = st.wait_on_unwind();
        let (dst, src, _) = acts(&mut d, &mut s)?;
        let ran = rule.fwd(dst, src).map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// The `extern "C"` primal of an array rule: the call through the rule object, all inactive.
///
/// # Safety
/// As `RefSide::open_mut` for `dst` and `src` (each shadow slot holding its primal).
pub unsafe fn array_primal<'h, D, S, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    // SAFETY: this function's contract.
    unsafe { forward((name, Bridge::Primal), make, dst, src) }
}

/// The forward rule of an array rule (Enzyme's forward-mode convention).
///
/// # Safety
/// As [`array_primal`], the shadows included.
pub unsafe fn array_fwd<'h, D, S, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    // SAFETY: this function's contract.
    unsafe { forward((name, Bridge::Fwd), make, dst, src) }
}

/// The tape of a bridged array call: the rule's, and which sides were active.
struct ArrayTape<Tp> {
    tape: Tp,
    active: [bool; 2],
}

/// The augmented primal of an array rule; returns the boxed tape, or null after recording the
/// error.
///
/// # Safety
/// As [`array_fwd`].
pub unsafe fn array_aug<'h, D, S, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
) -> *mut c_void
where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    record((name, Bridge::Aug), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, mut d, mut s) = unsafe { prepare(make, dst, src)? };
        let _unwind = st.wait_on_unwind();
        let (dst, src, active) = acts(&mut d, &mut s)?;
        let tape = rule.aug(dst, src).map_err(AdError::Rule);
        let tape = finished(st, tape)?;
        let boxed = Box::new(ArrayTape::<R::Tape> { tape, active });
        Ok(Box::into_raw(boxed).cast::<c_void>())
    })
    .unwrap_or(core::ptr::null_mut())
}

/// The reverse of an array rule, with the tape of [`array_aug`].
///
/// # Safety
/// As [`array_aug`]; `tape` is null or what [`array_aug`] returned for this call (the same rule
/// type `R`), not used again.
pub unsafe fn array_rev<'h, D, S, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<R, AdError>,
    dst: D,
    src: Option<S>,
    tape: *mut c_void,
) where
    D: RefSide<'h>,
    S: RefSide<'h>,
    R: AdRefRule<'h, D::Buf, S::Buf>,
{
    let _ = record((name, Bridge::Rev), || {
        if tape.is_null() {
            return Err(AdError::NoTape);
        }
        // SAFETY: a tape of `array_aug` for this `R`, taken once (this function's contract).
        let ArrayTape { tape, active } =
            unsafe { *Box::from_raw(tape.cast::<ArrayTape<R::Tape>>()) };
        // SAFETY: this function's contract.
        let (_e, st, mut rule, mut d, mut s) = unsafe { prepare(make, dst, src)? };
        let _unwind = st.wait_on_unwind();
        let (dst, src, now) = acts(&mut d, &mut s)?;
        if now != active {
            return Err(AdError::ActivityChanged { what: "dst or src" });
        }
        let ran = rule.rev(tape, dst, src).map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// A fill of an array by value (`FillRule`), for the fill bridges below.
pub struct RefFill<R>(pub R);

/// The fill's rule object and its destination opened.
///
/// # Safety
/// As `RefSide::open_mut` for `dst`.
#[allow(clippy::type_complexity)]
unsafe fn prepare_fill<'h, D, R>(
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
) -> Result<(Entered, Streams<'h>, R, (D::Mut, Option<D::Mut>)), AdError>
where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    let entered = Entered::new()?;
    // SAFETY: the contract.
    let st = unsafe { ref_streams::<D, D>(&dst, None)? };
    let RefFill(rule) = make(st)?;
    // SAFETY: the contract.
    let d = unsafe { dst.open_mut("dst")? };
    Ok((entered, st, rule, d))
}

/// The `extern "C"` primal of a fill of an array.
///
/// # Safety
/// As [`array_primal`] for `dst`.
pub unsafe fn array_fill_primal<'h, D, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
    v: <D::Buf as ShadowRead>::Elem,
) where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    let _ = record((name, Bridge::Primal), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, (mut p, _)) = unsafe { prepare_fill(make, dst)? };
        let _unwind = st.wait_on_unwind();
        let ran = rule
            .forward(Const(p.borrow_mut()), Const(v))
            .map_err(AdError::Rule);
        finished(st, ran)
    });
}

/// The forward rule of a fill of an array: `d_dst[R] ← dv`.
///
/// # Safety
/// As [`array_fwd`] for `dst`.
pub unsafe fn array_fill_fwd<'h, D, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
    (v, dv): (<D::Buf as ShadowRead>::Elem, <D::Buf as ShadowRead>::Elem),
) where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    let _ = record((name, Bridge::Fwd), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, (mut p, d)) = unsafe { prepare_fill(make, dst)? };
        let _unwind = st.wait_on_unwind();
        let ran = match d {
            Some(mut d) => rule.forward(
                Duplicated::new(p.borrow_mut(), d.borrow_mut()),
                Dual::new(v, dv),
            ),
            None => rule.forward(Const(p.borrow_mut()), Const(v)),
        };
        finished(st, ran.map_err(AdError::Rule))
    });
}

/// The tape of a bridged fill of an array, and whether the destination was active.
struct FillTape<Tp> {
    tape: Tp,
    active: bool,
}

/// The augmented primal of a fill of an array (the value has no shadow slot: see `fill.rs`).
///
/// # Safety
/// As [`array_aug`] for `dst`.
pub unsafe fn array_fill_aug<'h, D, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
    v: <D::Buf as ShadowRead>::Elem,
) -> *mut c_void
where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    record((name, Bridge::Aug), || {
        // SAFETY: this function's contract.
        let (_e, st, mut rule, (mut p, d)) = unsafe { prepare_fill(make, dst)? };
        let _unwind = st.wait_on_unwind();
        let active = d.is_some();
        let tape = match d {
            Some(mut d) => {
                rule.augmented_primal(Duplicated::new(p.borrow_mut(), d.borrow_mut()), Active(v))
            }
            None => rule.augmented_primal(Const(p.borrow_mut()), Active(v)),
        };
        let tape = finished(st, tape.map_err(AdError::Rule))?;
        Ok(Box::into_raw(Box::new(FillTape { tape, active })).cast::<c_void>())
    })
    .unwrap_or(core::ptr::null_mut())
}

/// The reverse of a fill of an array: zeroes `d_dst[R]` and returns `d_v = Σ_R d_dst` (zero
/// after an error, which is recorded).
///
/// # Safety
/// As [`array_rev`] for `dst`.
pub unsafe fn array_fill_rev<'h, D, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'h>) -> Result<RefFill<R>, AdError>,
    dst: D,
    v: <D::Buf as ShadowRead>::Elem,
    tape: *mut c_void,
) -> <D::Buf as ShadowRead>::Elem
where
    D: RefSide<'h>,
    D::Buf: ShadowMemory,
    R: FillRule<'h, D::Buf>,
{
    type Tp<D> = RegionTape<<D as ShadowRead>::Elem>;
    record((name, Bridge::Rev), || {
        if tape.is_null() {
            return Err(AdError::NoTape);
        }
        // SAFETY: a tape of `array_fill_aug` for this `D`, taken once (this function's contract).
        let FillTape { tape, active } =
            unsafe { *Box::from_raw(tape.cast::<FillTape<Tp<D::Buf>>>()) };
        // SAFETY: this function's contract.
        let (_e, st, mut rule, (mut p, d)) = unsafe { prepare_fill(make, dst)? };
        let _unwind = st.wait_on_unwind();
        if d.is_some() != active {
            return Err(AdError::ActivityChanged { what: "dst" });
        }
        let dv = match d {
            Some(mut d) => rule
                .reverse(
                    tape,
                    Duplicated::new(p.borrow_mut(), d.borrow_mut()),
                    Active(v),
                )
                .map(|[dv]| dv),
            None => rule
                .reverse(tape, Const(p.borrow_mut()), Active(v))
                .map(|[]| Differentiable::zero()),
        };
        finished(st, dv.map_err(AdError::Rule))
    })
    .unwrap_or_else(Differentiable::zero)
}
