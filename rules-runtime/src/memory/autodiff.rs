//! The raw side of the `std::autodiff` bridges ([`crate::autodiff`]): the `#[repr(C)]` buffer
//! handles users pass into a differentiated function, and the functions the generated
//! `extern "C"` primal, augmented primal and reverse call. Enzyme hands those functions raw
//! pointers (each argument followed by its shadow slot); here they become checked activities
//! for the rule object's own methods, so the shadow work stays the rule's, on its stream.
//!
//! Each argument that is a buffer reaches the bridge as a [`Side`]: a handle (device, pinned or
//! unified memory, or pageable memory given as a handle), or a host slice's pointer and length.
//! A shadow slot equal to its primal means Enzyme treated the argument as inactive: for a source
//! that is `Const` (no derivative flows into it), for a destination it is refused (its
//! derivative would be lost: a wrong gradient).

use super::{DeviceAddr, MemoryKind, ShadowMemory};
use crate::activity::{Const, Duplicated};
use crate::autodiff::{AdError, Bridge, record};
use crate::element::Differentiable;
use crate::error::Error;
use crate::rules::CopyTape;
use crate::rules::RawCopyRule;
use cudarc::driver::CudaStream;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

/// Which of a pair a handle is.
const PRIMAL: u32 = 0;
const SHADOW: u32 = 1;

/// One buffer of a differentiated function, as Enzyme sees it: a pointer to the elements, their
/// number, the memory kind, and the pointer of its partner (the primal's shadow, or the shadow's
/// primal). Made only by [`AdPair::new`], which borrows both buffers for as long as the pair
/// lives; reached only through the pair ([`AdPair::split`]), so a handle never outlives them.
///
/// Pass the primal as a `Duplicated` argument of the `#[autodiff_reverse]` function and the
/// shadow as its shadow; inside, hand `&AdBuf` to the rule's `*_ad` function.
///
/// A handle also carries the stream its pair was made for: the bridges give it to the rule (a
/// rule's stream is not an argument of the bridge, see [`Streams`]).
#[repr(C)]
pub struct AdBuf<T> {
    ptr: *mut T,
    len: usize,
    partner: *mut T,
    stream: *const Arc<CudaStream>,
    kind: u32,
    role: u32,
}

impl<T> AdBuf<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The memory kind of the elements.
    pub fn kind(&self) -> MemoryKind {
        kind_of(self.kind)
    }
}

fn kind_code(kind: MemoryKind) -> u32 {
    match kind {
        MemoryKind::Host => 0,
        MemoryKind::Pinned => 1,
        MemoryKind::Device => 2,
        MemoryKind::Unified => 3,
        MemoryKind::Array => 4,
    }
}

fn kind_of(code: u32) -> MemoryKind {
    match code {
        0 => MemoryKind::Host,
        1 => MemoryKind::Pinned,
        2 => MemoryKind::Device,
        3 => MemoryKind::Unified,
        _ => MemoryKind::Array,
    }
}

/// A buffer and its shadow, borrowed for `'a`, as two handles for a differentiated function.
/// cudarc's guards are held until the pair is dropped: the work the rules enqueue on `stream`
/// is then recorded on both buffers (their other streams wait for it).
pub struct AdPair<'a, T> {
    primal: AdBuf<T>,
    shadow: AdBuf<T>,
    _guards: [Option<DeviceAddr<'a>>; 2],
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T: Differentiable> AdPair<'a, T> {
    /// Handles for `primal` and its `shadow`, of the same memory kind and length (device, pinned,
    /// unified or pageable host memory: any [`ShadowMemory`]), for rules whose work is ordered
    /// on `stream`: the bridges hand it to the rule whose argument the handle is.
    ///
    /// Returns [`Error::UnsupportedKinds`] for two kinds or a CUDA array, and
    /// [`Error::LengthMismatch`] for two lengths.
    pub fn new<B: ShadowMemory<Elem = T> + ?Sized>(
        primal: &'a mut B,
        shadow: &'a mut B,
        stream: &'a Arc<CudaStream>,
    ) -> crate::Result<Self> {
        Self::make(primal, shadow, Some(stream))
    }

    /// Handles for pageable host memory (`[T]`, `Vec<T>`), which needs no stream. Other
    /// memory: [`Error::UnsupportedKinds`] (use [`AdPair::new`]).
    pub fn new_host<B: ShadowMemory<Elem = T> + ?Sized>(
        primal: &'a mut B,
        shadow: &'a mut B,
    ) -> crate::Result<Self> {
        Self::make(primal, shadow, None)
    }

    fn make<B: ShadowMemory<Elem = T> + ?Sized>(
        primal: &'a mut B,
        shadow: &'a mut B,
        stream: Option<&'a Arc<CudaStream>>,
    ) -> crate::Result<Self> {
        let (kind, len) = (primal.kind(), primal.len());
        if shadow.kind() != kind || kind == MemoryKind::Array {
            return Err(Error::UnsupportedKinds {
                op: "AdPair::new",
                dst: kind,
                src: shadow.kind(),
                why: "a buffer and its shadow must be linear memory of one kind",
            });
        }
        if shadow.len() != len {
            return Err(Error::LengthMismatch {
                what: "the shadow of the AdPair's buffer".into(),
                expected: len,
                found: shadow.len(),
            });
        }
        let on = stream.map(|s| &**s);
        let (p, gp) = address(primal, on)?;
        let (s, gs) = address(shadow, on)?;
        let stream = stream.map_or(core::ptr::null(), core::ptr::from_ref);
        let handle = |ptr, partner, role| AdBuf {
            ptr,
            len,
            partner,
            stream,
            kind: kind_code(kind),
            role,
        };
        Ok(AdPair {
            primal: handle(p, s, PRIMAL),
            shadow: handle(s, p, SHADOW),
            _guards: [gp, gs],
            _borrow: PhantomData,
        })
    }

    /// The primal's handle and the shadow's, as an `#[autodiff_reverse]` function's
    /// `Duplicated` argument takes them (`df(.., primal, shadow, ..)`).
    pub fn split(&mut self) -> (&AdBuf<T>, &mut AdBuf<T>) {
        (&self.primal, &mut self.shadow)
    }
}

/// The address of a buffer's elements, and the guard to hold for device-reachable memory.
fn address<'a, B: ShadowMemory + ?Sized>(
    buf: &'a mut B,
    stream: Option<&'a CudaStream>,
) -> crate::Result<(*mut B::Elem, Option<DeviceAddr<'a>>)> {
    if buf.kind() == MemoryKind::Host {
        let ptr = buf
            .host_mut()?
            .map_or(core::ptr::null_mut(), |s| s.as_mut_ptr());
        return Ok((ptr, None));
    }
    let kind = buf.kind();
    match stream.and_then(|s| buf.device_mut(s)) {
        Some(addr) => Ok((addr.addr() as *mut B::Elem, Some(addr))),
        None => Err(Error::UnsupportedKinds {
            op: "AdPair::new",
            dst: kind,
            src: kind,
            why: "the buffer gives no address on this stream (or none was given: AdPair::new_host is for pageable memory)",
        }),
    }
}

/// A buffer argument of a bridge: its primal, its shadow slot, and how the rule takes it.
pub enum Side<T> {
    /// A handle and the handle in its shadow slot, for a side of the declared kind.
    Handle(*const AdBuf<T>, *const AdBuf<T>, MemoryKind),
    /// A host slice: its pointer and length, and the pointer in its shadow slot.
    Slice(*mut T, usize, *mut T),
}

/// The stream of a call's handles, for a rule that has one: the bridge hands it to the rule's
/// constructor (`make`). Not an argument of the bridge: in forward mode, Enzyme uses a custom
/// derivative only when every argument it treats as constant is a float or an integer (a
/// constant pointer, such as a stream, makes it differentiate the body instead).
#[derive(Clone, Copy)]
pub struct Streams<'s>(Option<&'s Arc<CudaStream>>);

impl<'s> Streams<'s> {
    /// The stream, or the error that a rule with a stream got no handle that carries one.
    pub fn get(self) -> Result<&'s Arc<CudaStream>, AdError> {
        self.0.ok_or(AdError::Handle {
            what: "stream",
            why: "the rule has a stream, which the bridges take from its handles: make them with \
                  AdPair::new(.., stream)"
                .into(),
        })
    }
}

/// The stream of the call's handles; an error when two disagree.
///
/// # Safety
/// As [`Side::resolve`].
unsafe fn streams<'s, T>(dst: &Side<T>, src: &Side<T>) -> Result<Streams<'s>, AdError> {
    let mut found: Option<*const Arc<CudaStream>> = None;
    for side in [dst, src] {
        if let Side::Handle(h, _, _) = *side {
            // SAFETY: a live handle, by this function's contract.
            let s = unsafe { (*h).stream };
            if s.is_null() {
                continue;
            }
            match found {
                // SAFETY: non-null stream pointers of live handles point at the `Arc`s their
                // pairs borrow.
                Some(f) if !Arc::ptr_eq(unsafe { &*f }, unsafe { &*s }) => {
                    return Err(AdError::Handle {
                        what: "stream",
                        why: "the dst and src handles were made for two streams".into(),
                    });
                }
                _ => found = Some(s),
            }
        }
    }
    // SAFETY: as above; the pair (and so the `Arc`) outlives the bridge's call.
    Ok(Streams(found.map(|s| unsafe { &*s })))
}

/// What a side became: both pointers (`Duplicated`), or the primal alone (inactive: `Const`).
#[derive(Clone, Copy)]
enum Resolved<T> {
    Dup(*mut T, *mut T),
    Const(*mut T),
}

impl<T> Side<T> {
    /// Checks the side against the declared kind and the elements the call reaches (`offset +
    /// n`), and reads its pointers.
    ///
    /// # Safety
    /// Handle pointers point at live [`AdBuf`]s (the bridge's arguments: the safe `*_ad`
    /// function passes references, and Enzyme their shadows); a slice's pointer is valid for its
    /// length, and its shadow slot for as many elements (Enzyme's shadow of it).
    unsafe fn resolve(
        &self,
        what: &'static str,
        offset: usize,
        n: usize,
    ) -> Result<Resolved<T>, AdError> {
        let need = offset
            .checked_add(n)
            .ok_or(AdError::Rule(Error::RangeOverflow {
                what,
                offset,
                len: n,
            }))?;
        let short = |len: usize| {
            AdError::Rule(Error::LengthMismatch {
                what: format!("{what} (offset {offset} + length {n})"),
                expected: need,
                found: len,
            })
        };
        match *self {
            Side::Slice(p, len, d) => {
                if len < need {
                    return Err(short(len));
                }
                Ok(if d == p {
                    Resolved::Const(p)
                } else {
                    Resolved::Dup(p, d)
                })
            }
            Side::Handle(hp, hd, kind) => {
                // SAFETY: live handles, by this function's contract.
                let (p, d) = unsafe { (&*hp, &*hd) };
                if p.role != PRIMAL || kind_of(p.kind) != kind {
                    return Err(AdError::Handle {
                        what,
                        why: format!(
                            "expected the primal handle of {kind:?} memory, got the {} handle of {:?} memory",
                            if p.role == PRIMAL { "primal" } else { "shadow" },
                            p.kind()
                        ),
                    });
                }
                if p.len < need {
                    return Err(short(p.len));
                }
                if core::ptr::eq(hp, hd) {
                    return Ok(Resolved::Const(p.ptr));
                }
                if d.role != SHADOW || d.ptr != p.partner || d.partner != p.ptr {
                    return Err(AdError::Handle {
                        what,
                        why: "the shadow slot holds a handle that is not this buffer's shadow \
                              (pass the two handles of one AdPair)"
                            .into(),
                    });
                }
                Ok(Resolved::Dup(p.ptr, d.ptr))
            }
        }
    }
}

/// The tape of a bridged copy: the rule's, and which sides were active (`[dst, src]`).
struct BridgeTape {
    tape: CopyTape,
    active: [bool; 2],
}

/// The activities of a call, or why there are none: a destination Enzyme treated as inactive
/// while its source is active would lose the source's derivative (refused); both inactive is a
/// copy with nothing to differentiate (`Const`, `Const`).
fn pattern<T>(d: Resolved<T>, s: Resolved<T>) -> Result<[bool; 2], AdError> {
    match (d, s) {
        (Resolved::Const(_), Resolved::Dup(..)) => {
            Err(AdError::InactiveDestination { what: "dst" })
        }
        (d, s) => Ok([
            matches!(d, Resolved::Dup(..)),
            matches!(s, Resolved::Dup(..)),
        ]),
    }
}

/// The `extern "C"` primal of a pointer copy: runs the copy through the rule object (every check
/// of the rule applies), as the function is called outside differentiation.
///
/// # Safety
/// As [`Side::resolve`] for `dst` and `src`; the rule's contract (the primitive's) for the
/// pointers the sides hold.
pub unsafe fn copy_primal<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
    extent: [usize; 3],
) where
    T: Differentiable,
    R: RawCopyRule<'s, T>,
{
    let [dst_off, src_off, n] = extent;
    let _ = record((name, Bridge::Primal), || {
        // SAFETY: this function's contract.
        let d = unsafe { dst.resolve("dst", dst_off, n)? };
        let s = unsafe { src.resolve("src", src_off, n)? };
        let (d, s) = (primal_of(d), primal_of(s));
        // SAFETY: this function's contract.
        let mut rule = make(unsafe { streams(&dst, &src)? })?;
        // SAFETY: checked sides; the rule's contract by this function's.
        unsafe { rule.forward(Const(d), Const(s.cast_const())) }.map_err(AdError::Rule)
    });
}

/// The forward rule of a pointer copy, Enzyme's forward-mode calling convention (each argument
/// followed by its shadow slot): the rule's `forward` on the resolved activities, `d_dst ←
/// d_src` (or `← 0` for an inactive source).
///
/// # Safety
/// As [`copy_aug`].
pub unsafe fn copy_fwd<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
    extent: [usize; 3],
) where
    T: Differentiable,
    R: RawCopyRule<'s, T>,
{
    let [dst_off, src_off, n] = extent;
    let _ = record((name, Bridge::Fwd), || {
        // SAFETY: this function's contract.
        let (dd, ds) = unsafe {
            (
                dst.resolve("dst", dst_off, n)?,
                src.resolve("src", src_off, n)?,
            )
        };
        pattern(dd, ds)?;
        // SAFETY: this function's contract.
        let mut rule = make(unsafe { streams(&dst, &src)? })?;
        // SAFETY: checked sides; the rule's contract by this function's.
        unsafe {
            match (dd, ds) {
                (Resolved::Dup(d, d_d), Resolved::Dup(s, d_s)) => rule.forward(
                    Duplicated::new(d, d_d),
                    Duplicated::new(s.cast_const(), d_s),
                ),
                (Resolved::Dup(d, d_d), Resolved::Const(s)) => {
                    rule.forward(Duplicated::new(d, d_d), Const(s.cast_const()))
                }
                (d, s) => rule.forward(Const(primal_of(d)), Const(primal_of(s).cast_const())),
            }
        }
        .map_err(AdError::Rule)
    });
}

fn primal_of<T>(r: Resolved<T>) -> *mut T {
    match r {
        Resolved::Dup(p, _) | Resolved::Const(p) => p,
    }
}

/// The augmented primal of a pointer copy: the rule's `augmented_primal` on the resolved
/// activities; returns the boxed tape, or null after recording the error.
///
/// # Safety
/// As [`copy_primal`], the shadows included.
pub unsafe fn copy_aug<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
    extent: [usize; 3],
) -> *mut c_void
where
    T: Differentiable,
    R: RawCopyRule<'s, T>,
{
    let [dst_off, src_off, n] = extent;
    record((name, Bridge::Aug), || {
        // SAFETY: this function's contract.
        let (dd, ds) = unsafe {
            (
                dst.resolve("dst", dst_off, n)?,
                src.resolve("src", src_off, n)?,
            )
        };
        let active = pattern(dd, ds)?;
        // SAFETY: this function's contract.
        let mut rule = make(unsafe { streams(&dst, &src)? })?;
        // SAFETY: checked sides; the rule's contract by this function's.
        let tape = unsafe {
            match (dd, ds) {
                (Resolved::Dup(d, d_d), Resolved::Dup(s, d_s)) => rule.augmented_primal(
                    Duplicated::new(d, d_d),
                    Duplicated::new(s.cast_const(), d_s),
                ),
                (Resolved::Dup(d, d_d), Resolved::Const(s)) => {
                    rule.augmented_primal(Duplicated::new(d, d_d), Const(s.cast_const()))
                }
                (d, s) => {
                    rule.augmented_primal(Const(primal_of(d)), Const(primal_of(s).cast_const()))
                }
            }
        }
        .map_err(AdError::Rule)?;
        Ok(Box::into_raw(Box::new(BridgeTape { tape, active })).cast::<c_void>())
    })
    .unwrap_or(core::ptr::null_mut())
}

/// The reverse of a pointer copy: the rule's `reverse` with the tape of [`copy_aug`].
///
/// # Safety
/// As [`copy_aug`]; `tape` is null or what [`copy_aug`] returned for this call, not used again.
pub unsafe fn copy_rev<'s, T, R>(
    name: &'static str,
    make: impl FnOnce(Streams<'s>) -> Result<R, AdError>,
    dst: Side<T>,
    src: Side<T>,
    extent: [usize; 3],
    tape: *mut c_void,
) where
    T: Differentiable,
    R: RawCopyRule<'s, T>,
{
    let [dst_off, src_off, n] = extent;
    let _ = record((name, Bridge::Rev), || {
        if tape.is_null() {
            return Err(AdError::NoTape);
        }
        // SAFETY: a tape of `copy_aug`, taken once (this function's contract).
        let BridgeTape { tape, active } = unsafe { *Box::from_raw(tape.cast::<BridgeTape>()) };
        // SAFETY: this function's contract.
        let (dd, ds) = unsafe {
            (
                dst.resolve("dst", dst_off, n)?,
                src.resolve("src", src_off, n)?,
            )
        };
        if pattern(dd, ds)? != active {
            return Err(AdError::ActivityChanged { what: "dst or src" });
        }
        // SAFETY: this function's contract.
        let mut rule = make(unsafe { streams(&dst, &src)? })?;
        // SAFETY: checked sides; the rule's contract by this function's.
        unsafe {
            match (dd, ds) {
                (Resolved::Dup(d, d_d), Resolved::Dup(s, d_s)) => rule.reverse(
                    tape,
                    Duplicated::new(d, d_d),
                    Duplicated::new(s.cast_const(), d_s),
                ),
                (Resolved::Dup(d, d_d), Resolved::Const(s)) => {
                    rule.reverse(tape, Duplicated::new(d, d_d), Const(s.cast_const()))
                }
                (d, s) => rule.reverse(tape, Const(primal_of(d)), Const(primal_of(s).cast_const())),
            }
        }
        .map_err(AdError::Rule)
    });
}

/// What Enzyme's `preserve-nvvm` pass reads from a registration static:
/// `__enzyme_register_gradient_<primal>` holds `[primal, augmented primal, reverse]`,
/// `__enzyme_register_derivative_<primal>` holds `[primal, forward]`.
#[repr(C)]
pub struct Registration<const N: usize>(pub [*const (); N]);

// SAFETY: function addresses, never written or dereferenced by Rust code.
unsafe impl<const N: usize> Sync for Registration<N> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autodiff::take_error;

    #[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate)]
    unsafe fn host_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
        // SAFETY: the rule's contract.
        unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
    }

    #[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate)]
    unsafe fn panicking(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
        let _ = (dst, src);
        panic!("the primitive panicked at n = {n}");
    }

    const EXTENT: [usize; 3] = [0, 0, 3];

    /// A host slice and its shadow as a bridge sees them; `inactive`: Enzyme's inactive slot.
    fn slice(p: &mut [f32; 3], d: &mut [f32; 3], inactive: bool) -> Side<f32> {
        let p = p.as_mut_ptr();
        Side::Slice(p, 3, if inactive { p } else { d.as_mut_ptr() })
    }

    fn error_text() -> String {
        take_error()
            .map(|(e, n)| format!("{n}: {e}"))
            .unwrap_or_default()
    }

    #[test]
    fn active_source_and_destination_move_the_cotangent() {
        let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
        // SAFETY: live arrays of 3 elements.
        let tape = unsafe {
            copy_aug(
                "t",
                |_| Ok(host_copy_rule(3)),
                slice(&mut y, &mut dy, false),
                slice(&mut x, &mut dx, false),
                EXTENT,
            )
        };
        assert!(!tape.is_null(), "{}", error_text());
        assert_eq!(y, [1.0, 2.0, 3.0]);
        dy = [2.0, 4.0, 6.0];
        // SAFETY: as above, and the tape of that call.
        unsafe {
            copy_rev(
                "t",
                |_| Ok(host_copy_rule(3)),
                slice(&mut y, &mut dy, false),
                slice(&mut x, &mut dx, false),
                EXTENT,
                tape,
            )
        };
        assert_eq!(error_text(), "");
        assert_eq!((dx, dy), ([2.0, 4.0, 6.0], [0.0; 3]));
    }

    #[test]
    fn an_inactive_source_is_const_and_untouched() {
        let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
        // SAFETY: live arrays of 3 elements.
        let tape = unsafe {
            copy_aug(
                "t",
                |_| Ok(host_copy_rule(3)),
                slice(&mut y, &mut dy, false),
                slice(&mut x, &mut dx, true),
                EXTENT,
            )
        };
        assert!(!tape.is_null(), "{}", error_text());
        dy = [5.0; 3];
        // SAFETY: as above.
        unsafe {
            copy_rev(
                "t",
                |_| Ok(host_copy_rule(3)),
                slice(&mut y, &mut dy, false),
                slice(&mut x, &mut dx, true),
                EXTENT,
                tape,
            )
        };
        assert_eq!(error_text(), "");
        // Const source: nothing accumulated into it (not into its primal either); the
        // destination's cotangent consumed.
        assert_eq!((x, dx, dy), ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3]));
    }

    #[test]
    fn an_inactive_destination_of_an_active_source_is_refused() {
        let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
        // SAFETY: live arrays of 3 elements.
        let tape = unsafe {
            copy_aug(
                "t",
                |_| Ok(host_copy_rule(3)),
                slice(&mut y, &mut dy, true),
                slice(&mut x, &mut dx, false),
                EXTENT,
            )
        };
        assert!(tape.is_null());
        assert_eq!(y, [0.0; 3], "nothing copied");
        // SAFETY: as above; a null tape.
        unsafe {
            copy_rev(
                "t",
                |_| Ok(host_copy_rule(3)),
                slice(&mut y, &mut dy, true),
                slice(&mut x, &mut dx, false),
                EXTENT,
                tape,
            )
        };
        let text = error_text();
        assert!(
            text.starts_with(
                "2: t (augmented primal): `dst`: Enzyme treated the destination as inactive"
            ),
            "{text}"
        );
        assert_eq!(dx, [0.0; 3]);
    }

    #[test]
    fn both_inactive_copy_and_do_nothing_more() {
        let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
        // SAFETY: live arrays of 3 elements.
        let tape = unsafe {
            copy_aug(
                "t",
                |_| Ok(host_copy_rule(3)),
                slice(&mut y, &mut dy, true),
                slice(&mut x, &mut dx, true),
                EXTENT,
            )
        };
        assert!(!tape.is_null(), "{}", error_text());
        assert_eq!(y, x);
        // SAFETY: as above.
        unsafe {
            copy_rev(
                "t",
                |_| Ok(host_copy_rule(3)),
                slice(&mut y, &mut dy, true),
                slice(&mut x, &mut dx, true),
                EXTENT,
                tape,
            )
        };
        assert_eq!(error_text(), "");
        assert_eq!((x, y), ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]));
    }

    #[test]
    fn a_panic_is_caught_at_the_edge() {
        let (mut x, mut dx, mut y, mut dy) = ([1.0, 2.0, 3.0], [0.0; 3], [0.0; 3], [0.0; 3]);
        // SAFETY: live arrays of 3 elements.
        let tape = unsafe {
            copy_aug(
                "p",
                |_| Ok(panicking_rule(3)),
                slice(&mut y, &mut dy, false),
                slice(&mut x, &mut dx, false),
                EXTENT,
            )
        };
        assert!(tape.is_null());
        let text = error_text();
        assert!(text.contains("p (augmented primal): panic"), "{text}");
    }

    #[test]
    fn handles_are_checked_for_kind_pairing_and_length() {
        let (mut a, mut da) = (vec![1.0f32, 2.0, 3.0], vec![0.0f32; 3]);
        let (mut b, mut db) = (vec![0.0f32; 2], vec![0.0f32; 2]);
        let mut short = vec![0.0f32; 2];
        let err = pair(&mut a.clone(), &mut short)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("length mismatch"), "{err}");
        let mut pa = pair(&mut a, &mut da).unwrap();
        let mut pb = pair(&mut b, &mut db).unwrap();
        let (ha, hda) = pa.split();
        let (hb, hdb) = pb.split();
        let (ha, hda, hb, hdb): (
            *const AdBuf<f32>,
            *const AdBuf<f32>,
            *const AdBuf<f32>,
            *const AdBuf<f32>,
        ) = (ha, hda, hb, hdb);
        // SAFETY: live handles.
        unsafe {
            let ok = Side::Handle(ha, hda, MemoryKind::Host).resolve("x", 0, 3);
            assert!(matches!(ok, Ok(Resolved::Dup(..))));
            let inactive = Side::Handle(ha, ha, MemoryKind::Host).resolve("x", 0, 3);
            assert!(matches!(inactive, Ok(Resolved::Const(..))));
            let kind = Side::Handle(ha, hda, MemoryKind::Device)
                .resolve("x", 0, 3)
                .err()
                .unwrap();
            assert!(
                kind.to_string()
                    .contains("expected the primal handle of Device memory"),
                "{kind}"
            );
            let swapped = Side::Handle(hda, ha, MemoryKind::Host)
                .resolve("x", 0, 3)
                .err()
                .unwrap();
            assert!(
                swapped.to_string().contains("got the shadow handle"),
                "{swapped}"
            );
            let other = Side::Handle(ha, hdb, MemoryKind::Host)
                .resolve("x", 0, 3)
                .err()
                .unwrap();
            assert!(
                other.to_string().contains("not this buffer's shadow"),
                "{other}"
            );
            let long = Side::Handle(hb, hdb, MemoryKind::Host)
                .resolve("x", 1, 2)
                .err()
                .unwrap();
            assert!(
                long.to_string()
                    .contains("has 2 elements but 3 were expected"),
                "{long}"
            );
        }
    }

    /// A pair of host buffers (no stream needed for host memory).
    fn pair<'a>(p: &'a mut Vec<f32>, s: &'a mut Vec<f32>) -> crate::Result<AdPair<'a, f32>> {
        AdPair::new_host(p, s)
    }
}
