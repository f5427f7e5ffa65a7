//! The raw side of the `std::autodiff` bridges ([`crate::autodiff`]): the `#[repr(C)]` buffer
//! handles users pass into a differentiated function, and the functions the generated
//! `extern "C"` primal, augmented primal and reverse call. Enzyme hands those functions raw
//! pointers (each argument followed by its shadow slot); here they become checked activities
//! for the rule object's own methods, so the shadow work stays the rule's, on its stream.
//!
//! Each argument that is a buffer reaches the bridge ([`bridge`]) as a [`Side`]: a handle (device, pinned or
//! unified memory, or pageable memory given as a handle), or a host slice's pointer and length.
//! A shadow slot equal to its primal means Enzyme treated the argument as inactive: for a source
//! that is `Const` (no derivative flows into it), for a destination it is refused (its
//! derivative would be lost: a wrong gradient).

use crate::element::Differentiable;
use crate::error::Error;
use crate::memory::{DeviceAddr, MemoryKind, ShadowMemory};
use cudarc::driver::CudaStream;
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
/// rule's stream is not an argument of the bridge, see `Streams`).
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

    /// Whether this is the shadow handle of `primal`'s pair: the addresses and the length. Two
    /// empty slices can share an address (`split_at_mut(0)`), so a pair of empty buffers can
    /// hold the addresses of another pair's; the length tells its shadow apart, which the rules
    /// then use for the primal's length.
    fn is_shadow_of(&self, primal: &AdBuf<T>) -> bool {
        self.role == SHADOW
            && self.ptr == primal.partner
            && self.partner == primal.ptr
            && self.len == primal.len
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
/// is then recorded on both buffers (their other streams wait for it). Each bridge also waits for
/// its stream before it returns, so that a pair that is forgotten instead of dropped leaves no
/// copy running on memory its owner may free or read.
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
    ) -> crate::error::Result<Self> {
        Self::make(primal, shadow, Some(stream))
    }

    /// Handles for pageable host memory (`[T]`, `Vec<T>`), which needs no stream. Other
    /// memory: [`Error::UnsupportedKinds`] (use [`AdPair::new`]).
    pub fn new_host<B: ShadowMemory<Elem = T> + ?Sized>(
        primal: &'a mut B,
        shadow: &'a mut B,
    ) -> crate::error::Result<Self> {
        Self::make(primal, shadow, None)
    }

    fn make<B: ShadowMemory<Elem = T> + ?Sized>(
        primal: &'a mut B,
        shadow: &'a mut B,
        stream: Option<&'a Arc<CudaStream>>,
    ) -> crate::error::Result<Self> {
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
        // The guards record the rules' work on the buffers' events from `stream`, which the
        // driver refuses across contexts (and cudarc ignores the failure): a buffer of another
        // context would be left unordered.
        if let Some(s) = stream {
            for (what, c) in [
                ("the AdPair's buffer", primal.context()),
                ("its shadow", shadow.context()),
            ] {
                if let Some(c) = c
                    && c.cu_ctx() != s.context().cu_ctx()
                {
                    return Err(Error::ContextMismatch {
                        what: what.into(),
                        expected: s.context().ordinal(),
                        found: c.ordinal(),
                    });
                }
            }
        }
        let on = stream.map(|s| &**s);
        let (p, gp) = address(primal, on)?;
        let (s, gs) = address(shadow, on)?;
        let stream = stream.map_or(core::ptr::null(), core::ptr::from_ref);
        let handle = |ptr, partner, role, stream| AdBuf {
            ptr,
            len,
            partner,
            stream,
            kind: kind_code(kind),
            role,
        };
        Ok(AdPair {
            primal: handle(p, s, PRIMAL, stream),
            // The shadow carries no stream: it is the handle safe code can move (`split` gives it
            // as `&mut`, so `mem::swap` can put it in a pair that outlives its own), and the
            // bridges take the stream from primals only.
            shadow: handle(s, p, SHADOW, core::ptr::null()),
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
) -> crate::error::Result<(*mut B::Elem, Option<DeviceAddr<'a>>)> {
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

mod arrays;
mod bridge;
mod fill;
#[cfg(feature = "autodiff")]
mod ready;
#[cfg(feature = "autodiff")]
mod ready_data;
#[cfg(feature = "autodiff")]
mod ready_rules;
mod rules;
mod tapes;
pub use arrays::{
    AdArray, AdArrayPair, ArraySide, BufSide, RefFill, RefMemset, RefRegion, SliceSide, array_aug,
    array_fill_aug, array_fill_fwd, array_fill_primal, array_fill_rev, array_fwd, array_primal,
    array_rev,
};
pub use bridge::{Side, Streams, bridge_aug, bridge_fwd, bridge_primal, bridge_rev};
pub use fill::{Fill, fill_aug, fill_fwd, fill_primal, fill_rev};
#[cfg(feature = "autodiff")]
pub use ready::{Bridged, BridgedBoxes};
#[cfg(feature = "autodiff")]
pub use ready_data::{AdData, DataBuffer};
pub use rules::{AdRule, Linear, Memset, Region};
pub(crate) use tapes::saved_len as pending_tapes;
pub use tapes::{save, take};

/// What Enzyme's `preserve-nvvm` pass reads from a registration static:
/// `__enzyme_register_gradient_<primal>` holds `[primal, augmented primal, reverse]`,
/// `__enzyme_register_derivative_<primal>` holds `[primal, forward]`.
#[repr(C)]
pub struct Registration<const N: usize>(pub [*const (); N]);

// SAFETY: function addresses, never written or dereferenced by Rust code.
unsafe impl<const N: usize> Sync for Registration<N> {}

#[cfg(all(test, feature = "autodiff"))]
mod alone;
#[cfg(test)]
mod tests;
#[cfg(all(test, feature = "autodiff"))]
mod tests_arrays;
#[cfg(all(test, feature = "autodiff"))]
mod tests_arrays_misuse;
#[cfg(all(test, feature = "autodiff"))]
mod tests_misuse;
#[cfg(all(test, feature = "autodiff"))]
mod tests_ready;
#[cfg(all(test, feature = "autodiff"))]
mod tests_ready_misuse;
#[cfg(all(test, feature = "autodiff"))]
mod tests_ready_misuse_boxes;
#[cfg(all(test, feature = "autodiff"))]
mod tests_ready_misuse_gpu;
#[cfg(test)]
mod tests_region;
#[cfg(all(test, feature = "autodiff"))]
mod tests_tapes;
#[cfg(all(test, feature = "autodiff"))]
mod tests_tapes_misuse;
#[cfg(all(test, feature = "autodiff"))]
mod tests_tapes_thread_end;
