//! The one error type of the runtime and of every generated rule.

mod debug;
mod disagreement;
mod driver;

pub use disagreement::{Assumed, PrimalDisagreement};
pub use driver::PrimalDriverError;
pub(crate) use driver::driver;
use driver::driver_error_of;

use crate::address::{MemoryKind, Region};

/// A boxed error returned by a user's primal copy function.
pub type PrimalError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong in a derivative rule or a runtime operation.
///
/// Every variant is raised *before* any byte is written, except [`Error::Primal`] and
/// [`Error::Driver`], which report a failure of the work itself.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No CUDA driver could be loaded on this machine.
    #[error(
        "no CUDA driver was found on this machine (libcuda could not be loaded); \
         use host memory, or run on a machine with an NVIDIA driver"
    )]
    NoDriver,

    /// There is no CUDA device with this ordinal (also when the driver loads but shows no device
    /// at all: a container without a GPU, `CUDA_VISIBLE_DEVICES=""`).
    #[error("no CUDA device {ordinal}: this machine has {count}")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },

    /// Two buffers that must have the same number of elements do not.
    #[error("length mismatch: {what} has {found} elements but {expected} were expected")]
    LengthMismatch {
        /// Which buffer is at fault, in words (e.g. "the shadow of `dst`, lane 2").
        what: String,
        /// The length it should have.
        expected: usize,
        /// The length it has.
        found: usize,
    },

    /// A pointer range (offset + length) does not fit in `usize` or the address space.
    #[error("{what}: offset {offset} + length {len} overflows the address space")]
    RangeOverflow {
        /// Which argument.
        what: &'static str,
        /// The offset given.
        offset: usize,
        /// The length given.
        len: usize,
    },

    /// Source and destination ranges overlap without being the same range.
    #[error(
        "{what}: the source and destination ranges partially overlap \
         (dst bytes {dst_start:#x}..{dst_end:#x}, src bytes {src_start:#x}..{src_end:#x}); \
         the derivative of such a copy is not a copy, so it is refused: copy through a temporary"
    )]
    PartialOverlap {
        /// Which pair of buffers.
        what: String,
        /// First byte of the destination.
        dst_start: u64,
        /// One past the last byte of the destination.
        dst_end: u64,
        /// First byte of the source.
        src_start: u64,
        /// One past the last byte of the source.
        src_end: u64,
    },

    /// A shadow shares memory with a primal, or with a shadow of another lane: the rule would
    /// read and write the same bytes as two different things.
    #[error(
        "{what} and {other} share memory; a shadow must be distinct from every primal and from \
         the shadows of other lanes (bytes {start:#x}..{end:#x} are in both)"
    )]
    Aliasing {
        /// One of the buffers (e.g. "the shadow of `dst` (lane 1)").
        what: String,
        /// The buffer it shares memory with.
        other: String,
        /// First shared byte.
        start: u64,
        /// One past the last shared byte.
        end: u64,
    },

    /// The tape handed to a reverse rule was not made by the matching augmented primal.
    #[error("the tape does not match these arguments: {0}")]
    TapeMismatch(String),

    /// Two buffers live on different CUDA contexts (devices) where one was required.
    #[error(
        "context mismatch: {what} lives on device {found} but the operation runs on device {expected}"
    )]
    ContextMismatch {
        /// Which buffer.
        what: String,
        /// The ordinal of the device the stream belongs to.
        expected: usize,
        /// The ordinal of the device the buffer belongs to.
        found: usize,
    },

    /// A box (a pitched region, [`crate::Pitched`]) does not fit its buffer or is malformed, or
    /// two boxes that must have the same shape do not.
    #[error("bad region for {what}: {why}")]
    BadRegion {
        /// Which buffer's box.
        what: String,
        /// What is wrong with it, in words.
        why: String,
    },

    /// This pair of memory kinds cannot be combined by this operation.
    #[error("unsupported memory kinds: {op} from {src:?} memory into {dst:?} memory ({why})")]
    UnsupportedKinds {
        /// The operation.
        op: &'static str,
        /// Destination memory kind.
        dst: MemoryKind,
        /// Source memory kind.
        src: MemoryKind,
        /// Why, and what to do instead.
        why: &'static str,
    },

    /// Device memory was used without a CUDA stream to order the work on.
    #[error(
        "{0} lives in device memory but no CUDA stream was given; mark the stream parameter \
         of the copy with `#[stream]`"
    )]
    NoStream(String),

    /// The operation's stream is being captured into a CUDA graph, and its route cannot be
    /// captured: it reads or writes host memory from the host (which waits for the stream), or
    /// forks work onto another device's streams. Nothing was enqueued; the capture is intact.
    #[error(
        "{op} cannot be recorded into a CUDA graph: its stream is capturing, and this route waits \
         on the host for host memory (or works on another device); capture only device-memory \
         rules (device, unified, pinned as its device buffer), or run this one outside the capture"
    )]
    Capturing {
        /// The operation.
        op: &'static str,
    },

    /// A CUDA driver call failed: one of the runtime's own, or, through `From<DriverError>`, one
    /// of the caller's (`stream.alloc_zeros(n)?` in a function returning [`Result`]; `op` is then
    /// "a cudarc call"). A rule never answers this for its primitive's failure: whatever the
    /// primitive returns, an `Error::Driver` that `?` made inside it included, is
    /// [`Error::Primal`], so that a primal's own error is told apart from the runtime's.
    #[error("CUDA driver error in {op}: {message}")]
    Driver {
        /// The operation that failed.
        op: &'static str,
        /// The driver's message.
        message: String,
    },

    /// The NCCL library could not be loaded (collective rules and communicators need it).
    #[error(
        "no NCCL library was found on this machine (libnccl.so could not be loaded); \
         install NCCL, or put the directory holding libnccl.so on LD_LIBRARY_PATH \
         (a pip wheel such as nvidia-nccl-cu13 ships only libnccl.so.2: link libnccl.so to it)"
    )]
    NoNccl,

    /// An NCCL call failed.
    #[error("NCCL error in {op}: {code} ({message})")]
    Nccl {
        /// The operation that failed.
        op: &'static str,
        /// NCCL's result code, e.g. `ncclInvalidUsage`.
        code: String,
        /// NCCL's description of it.
        message: String,
    },

    /// A root or peer rank does not exist in the communicator.
    #[error("{what} {rank} is not a rank of this communicator, which has ranks 0..{world_size}")]
    InvalidRank {
        /// Which rank argument (e.g. "the root of `broadcast`").
        what: &'static str,
        /// The rank given (negative ranks as given).
        rank: i64,
        /// The communicator's number of ranks.
        world_size: usize,
    },

    /// One device cannot map another device's memory (no peer access between them).
    #[error(
        "device {from} cannot access the memory of device {to} directly (no peer access between \
         them); copy rules across them still work, staged through peer copies, but direct peer \
         access cannot be enabled"
    )]
    NoPeerAccess {
        /// The device that would access.
        from: usize,
        /// The device whose memory would be accessed.
        to: usize,
    },

    /// The user's primal copy function returned an error. A cudarc [`DriverError`], by value or
    /// boxed (`Box<DriverError>`), is held as a [`PrimalDriverError`] (downcast to that), which
    /// formats without the driver. Build this variant with [`Error::primal`], which does that
    /// conversion (generated rules do); a cudarc `DriverError` put here directly, or boxed, is
    /// still shown (`Display` and `Debug`) as [`PrimalDriverError`] shows it. An error of the
    /// primal's own type is shown by its `Display`; where its chain of
    /// [`source`](std::error::Error::source)s holds a cudarc `DriverError`, `Debug` shows that
    /// `Display` and the chain (the driver's error by its code) instead of the type's own `Debug`,
    /// which would show cudarc's. Its [`source`](std::error::Error::source) is the error itself,
    /// whose own formatting is the caller's (a `Display` that shows a cudarc `DriverError`, as
    /// `#[error("{0}")]` does, needs the driver: show its code, `e.0`, instead).
    ///
    /// [`DriverError`]: cudarc::driver::DriverError
    #[error("the primal copy failed: {}", primal_text(.0))]
    Primal(#[source] PrimalError),

    /// The checked mode (the `checked` feature) found that the primitive did not write what its
    /// rule assumes (a copy, one repeated bit pattern, a value) in the destination's box. Raised
    /// right after the primitive's call, before any shadow work: nothing else was written, and
    /// no tape was made. See [`PrimalDisagreement`].
    #[error("{0}")]
    PrimalDisagrees(Box<PrimalDisagreement>),
}

impl Error {
    /// Wraps an error returned by the user's primal function (what generated rules do with it).
    /// A cudarc [`DriverError`], by value, boxed (`Box<DriverError>`, which `Into` boxes again)
    /// or in a `Box<dyn Error + Send + Sync>`, becomes a [`PrimalDriverError`]: cudarc's own
    /// `Display` and `Debug` ask the driver for its text and panic where the driver is missing,
    /// and this error must format everywhere.
    ///
    /// [`DriverError`]: cudarc::driver::DriverError
    pub fn primal(e: impl Into<PrimalError>) -> Self {
        let e: PrimalError = e.into();
        match driver_error_of(&*e) {
            Some(d) => Error::Primal(Box::new(PrimalDriverError(d))),
            None => Error::Primal(e),
        }
    }

    /// [`Error::PartialOverlap`] of a destination range `d` and a source range `s`.
    pub(crate) fn partial_overlap(what: impl Into<String>, d: Region, s: Region) -> Self {
        Error::PartialOverlap {
            what: what.into(),
            dst_start: d.start,
            dst_end: d.end,
            src_start: s.start,
            src_end: s.end,
        }
    }
}

/// The text of a primal's error: a cudarc `DriverError` put into [`Error::Primal`] directly
/// (or boxed) is shown as [`PrimalDriverError`] shows it (cudarc's own `Display` needs the driver).
fn primal_text(e: &PrimalError) -> String {
    match driver_error_of(&**e) {
        Some(d) => PrimalDriverError(d).to_string(),
        None => e.to_string(),
    }
}

/// `Ok` when `found == expected`, else [`Error::LengthMismatch`] naming `what`.
pub(crate) fn check_len(what: impl Into<String>, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what: what.into(),
            expected,
            found,
        })
    }
}

/// As [`check_len`], with the name made only on a mismatch: a call's success path formats no
/// `String` (the names of a call's lanes cost more than its length checks).
pub(crate) fn check_len_with(
    what: impl FnOnce() -> String,
    expected: usize,
    found: usize,
) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what: what(),
            expected,
            found,
        })
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;

#[cfg(test)]
mod tests;
