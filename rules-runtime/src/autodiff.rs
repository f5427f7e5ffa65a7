//! Rules that Rust's own AD engine calls: `std::autodiff` (nightly, Enzyme inside rustc).
//!
//! `#[derivative_rule(copy, dst = .., src = .., autodiff)]` on a pointer copy (or `copy2d`,
//! `copy3d`, `memset`, `fill`) generates, under
//! the runtime's `autodiff` feature (for the crate built with the autodiff flags: docs/autodiff.md),
//! the `extern "C"` primal Enzyme cannot see into, its augmented primal and reverse (which call
//! the rule object's methods: the shadow work is the rule's, on the copy's stream), the
//! `__enzyme_register_gradient_*` static that tells Enzyme to use them, and `<name>_ad`, the safe
//! function to call inside an `#[autodiff_reverse]` function. Nothing here needs nightly.
//!
//! Errors cannot cross Enzyme (a status return breaks its return activity): a bridge that fails
//! records an [`AdError`] for this thread and does nothing more; [`take_error`] takes it. Panics
//! are caught at the `extern "C"` edge and recorded the same way.
//!
//! Buffers the differentiated function reads or writes outside pageable host memory are passed
//! in as [`AdBuf`] handles, both of an [`AdPair`] made outside the function from a buffer and its
//! shadow (device, pinned, unified or pageable memory).
//!
//! This module is safe code; its one child, `raw`, is the bridges' trusted core (Enzyme's raw
//! pointers become checked activities there), and the only place below it with `unsafe`.
#![deny(unsafe_code)]

use crate::error::Error;
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

#[allow(unsafe_code)]
pub(crate) mod raw;

pub use raw::{AdArray, AdArrayPair, AdBuf, AdPair};

#[cfg(feature = "autodiff")]
pub mod copies;

/// What went wrong in a bridge (a generated `extern "C"` primal, augmented primal or reverse).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdError {
    /// The rule refused the call, or its work failed.
    #[error(transparent)]
    Rule(Error),
    /// Enzyme treated a destination as inactive (its shadow slot held the primal) while its
    /// source is active: the source's derivative would be lost, so the copy was refused.
    #[error(
        "`{what}`: Enzyme treated the destination as inactive (its shadow is the primal); \
         pass it as `Duplicated` (a handle of an AdPair, or a buffer the function's result \
         depends on)"
    )]
    InactiveDestination {
        /// Which argument.
        what: &'static str,
    },
    /// A handle that does not fit its parameter (its memory kind, or not the two of one pair).
    #[error("`{what}`: {why}")]
    Handle {
        /// Which argument.
        what: &'static str,
        /// Why.
        why: String,
    },
    /// The reverse found no tape: its augmented primal failed (that error came first).
    #[error("no tape: the augmented primal of this call failed")]
    NoTape,
    /// The reverse found no tape of its call: the last augmented primal on this thread whose
    /// tape is still kept is another call's, or there is none (reverses run in the reverse order
    /// of their augmented primals, on their thread).
    #[error(
        "no tape of this call: the last augmented primal on this thread is another call's \
         (a reverse runs after its augmented primal, in reverse order, on the same thread)"
    )]
    TapeOrder,
    /// The reverse saw an argument active that the augmented primal saw inactive, or the
    /// other way round.
    #[error("`{what}`: the augmented primal and the reverse disagree on its activity")]
    ActivityChanged {
        /// Which argument.
        what: &'static str,
    },
    /// The bridge panicked; the panic was caught at the `extern "C"` edge.
    #[error("panic: {0}")]
    Panic(String),
}

/// An error and the bridge it came from.
#[derive(Debug)]
pub struct BridgeError {
    /// The rule's primitive, and which bridge: `upload (augmented primal)`.
    pub bridge: String,
    /// What went wrong.
    pub error: AdError,
}

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.bridge, self.error)
    }
}

impl std::error::Error for BridgeError {}

thread_local! {
    /// The errors recorded on this thread since the last [`take_error`], first first.
    static ERRORS: RefCell<Vec<BridgeError>> = const { RefCell::new(Vec::new()) };
}

/// How many times bridges ran, by kind, on every thread (for tests and examples).
static CALLS: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

/// The first error the bridges recorded on this thread since the last call (later ones, such as
/// a reverse without its tape, usually follow from it), and the number recorded in all. Call it
/// after the differentiated function returns: `Some` means its results are not to be used.
pub fn take_error() -> Option<(BridgeError, usize)> {
    ERRORS.with(|e| {
        let mut all = std::mem::take(&mut *e.borrow_mut());
        let n = all.len();
        (n > 0).then(|| (all.swap_remove(0), n))
    })
}

/// How many augmented primals on this thread have kept a tape that no reverse has taken yet:
/// zero after a differentiated function returns, unless it panicked between an augmented primal
/// and its reverse, or a reverse was refused ([`AdError::TapeOrder`]). Those tapes stay until the
/// thread ends, below the entries of later calls, whose reverses (in Enzyme's order) take their
/// own first; a caller that skipped a reverse could hand a tape to the reverse of another call
/// with the same arguments, and this count is then the sign of it.
pub fn pending_tapes() -> usize {
    raw::pending_tapes()
}

/// How many times the bridges ran, on every thread.
pub fn calls() -> Calls {
    let [primal, forward, augmented_primal, reverse] = [0, 1, 2, 3].map(|i| CALLS[i].load(Relaxed));
    Calls {
        primal,
        forward,
        augmented_primal,
        reverse,
    }
}

/// Bridge runs, by kind ([`calls`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Calls {
    /// Primals (the bridged function called outside differentiation).
    pub primal: usize,
    /// Forward rules (`#[autodiff_forward]`).
    pub forward: usize,
    /// Augmented primals (`#[autodiff_reverse]`, forward sweep).
    pub augmented_primal: usize,
    /// Reverse rules.
    pub reverse: usize,
}

impl std::ops::Sub for Calls {
    type Output = Calls;
    fn sub(self, o: Calls) -> Calls {
        Calls {
            primal: self.primal - o.primal,
            forward: self.forward - o.forward,
            augmented_primal: self.augmented_primal - o.augmented_primal,
            reverse: self.reverse - o.reverse,
        }
    }
}

/// Which bridge: the primal, the forward rule, the augmented primal, the reverse.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum Bridge {
    /// The primal.
    Primal,
    /// The forward rule.
    Fwd,
    /// The augmented primal.
    Aug,
    /// The reverse.
    Rev,
}

/// Runs `f` for bridge `name`, catching a panic; records an error and answers `None`.
pub(crate) fn record<R>(
    (name, which): (&'static str, Bridge),
    f: impl FnOnce() -> Result<R, AdError>,
) -> Option<R> {
    CALLS[which as usize].fetch_add(1, Relaxed);
    let out = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let message = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(not a string)".into());
            // A payload whose `Drop` panics must not unwind out of the `extern "C"` edge either
            // (that aborts the process): dropped under `catch_unwind`, and a second payload is
            // leaked rather than dropped.
            if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(p))) {
                core::mem::forget(again);
            }
            Err(AdError::Panic(message))
        }
    };
    out.map_err(|error| {
        let what = match which {
            Bridge::Primal => "primal",
            Bridge::Fwd => "forward",
            Bridge::Aug => "augmented primal",
            Bridge::Rev => "reverse",
        };
        let bridge = format!("{name} ({what})");
        // During the thread's teardown the list is gone: the error is dropped, not a panic.
        let _ = ERRORS.try_with(|e| e.borrow_mut().push(BridgeError { bridge, error }));
    })
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_panics_are_recorded_and_taken_once() {
        assert!(take_error().is_none());
        let ok = record(("t", Bridge::Primal), || Ok(3));
        assert_eq!(ok, Some(3));
        let bad: Option<()> = record(("t", Bridge::Aug), || Err(AdError::NoTape));
        assert!(bad.is_none());
        let panicked: Option<()> = record(("p", Bridge::Rev), || panic!("boom"));
        assert!(panicked.is_none());
        let (first, n) = take_error().expect("two errors");
        assert_eq!(n, 2);
        assert_eq!(
            first.to_string(),
            "t (augmented primal): no tape: the augmented primal of this call failed"
        );
        assert!(take_error().is_none());
    }
}
