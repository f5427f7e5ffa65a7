//! The bodies of generated rules, written once here and called by the code that
//! `#[derivative_rule]` generates; one file per family. Each body checks everything first
//! (lengths or boxes, aliasing of every buffer against every other, the tape, and the route of
//! every lane's shadow work), so bad input changes nothing; then it runs the primal and the
//! shadow work.
//!
//! - [`copy`]: `dst ← src` on slices or raw pointers;
//! - [`pitched`]: two-buffer region rules (pitched 2D/3D copies, a copy with `restore`, a fill
//!   from a value held in a one-element buffer);
//! - [`fill`]: one-buffer region rules (memset, fill by value);
//! - [`region`]: what region rules share: boxes, the whole-call check, the tape;
//! - [`traits`]: the public face: one trait per family, whose provided methods (forward,
//!   augmented primal, reverse) call the bodies above; generated code implements them.
#![forbid(unsafe_code)]

mod checked;
mod copy;
mod fill;
mod pitched;
mod region;
mod traits;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_fingerprint;

/// A tape's fingerprint of a call: the words (addresses, lengths, boxes) mixed one word at a time.
/// Each step is a bijection of the word for a given state (xor, multiply by an odd constant,
/// xor-shift), so two calls that differ in one word always differ. It is a check that a reverse
/// was given its own call's buffers, not a secret: per word rather than per byte (FNV-1a), it costs
/// a handful of instructions per word (a loop over bytes would be a quarter of a region rule's
/// host time).
pub(crate) fn fingerprint(words: impl IntoIterator<Item = u64>) -> u64 {
    words.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, x| {
        let h = (h ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    })
}

/// Runs a call of the primitive on a destination it may write, then checks that the call left
/// the destination where it was and as long as it was: a body that reallocates or resizes its
/// `Vec` (`*dst = src.clone()`, `dst.extend(..)`) would leave the rule's lengths, boxes and tape
/// describing memory that is no longer the destination, and its derivative wrong. A failure of
/// the primitive itself, so `Error::Primal`.
pub(crate) fn in_place<X: crate::memory::ShadowRead + ?Sized>(
    name: &str,
    d: &mut X,
    call: impl FnOnce(&mut X) -> crate::error::Result<()>,
) -> crate::error::Result<()> {
    let before = d.region();
    in_place_from(name, before, d, call)
}

/// [`in_place`], given the destination's region as the call's checks already read it (a device
/// buffer's address costs a driver call).
pub(crate) fn in_place_from<X: crate::memory::ShadowRead + ?Sized>(
    name: &str,
    before: crate::memory::Region,
    d: &mut X,
    call: impl FnOnce(&mut X) -> crate::error::Result<()>,
) -> crate::error::Result<()> {
    let len = d.len();
    call(d)?;
    if d.region() != before {
        return Err(crate::error::Error::primal(format!(
            "the primitive moved or resized its destination `{name}` (from {len} to {} elements, or to another address): a rule's buffers keep their place and length through the call; write into the existing elements (`dst.copy_from_slice(src)`), not a new buffer",
            d.len()
        )));
    }
    Ok(())
}

pub use crate::memory::raw::rules::{RawCopyRule, RawFillRule, RawMemsetRule, RawRegionRule};
pub use crate::memory::raw::unsafe_args::UnsafeArgs;
pub use checked::RuleNames;
pub use copy::{
    CopyTape, PrimalOutcome, PtrCopy, copy_augmented_primal, copy_forward, copy_reverse,
};
pub(crate) use copy::{ptr_copy_augmented_primal, ptr_copy_forward, ptr_copy_reverse};
pub use fill::{
    fill_augmented_primal, fill_forward, fill_reverse, memset_augmented_primal, memset_forward,
    memset_reverse,
};
pub(crate) use fill::{
    ptr_fill_augmented_primal, ptr_fill_forward, ptr_fill_reverse, ptr_memset_augmented_primal,
    ptr_memset_forward, ptr_memset_reverse,
};
pub(crate) use pitched::{ptr_region_augmented_primal, ptr_region_forward, ptr_region_reverse};
pub use pitched::{region_augmented_primal, region_forward, region_reverse};
pub use region::{Boxes, RawRegion, RegionTape};
pub(crate) use traits::Ran;
pub use traits::{
    Captures, CollectiveRule, CopyRule, FillGradient, FillRule, InImpl, MemsetRule, RecvRule,
    RegionRule, SendRule,
};
