//! The one error type of the runtime and of every generated rule.

use crate::address::{MemoryKind, Region};
use cudarc::driver::DriverError;
use std::fmt;

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
    #[error("the primal copy failed: {}", primal_text(.0))]
    Primal(#[source] PrimalError),

    /// The checked mode (the `checked` feature) found that the primitive did not write what its
    /// rule assumes (a copy, one repeated bit pattern, a value) in the destination's box. Raised
    /// right after the primitive's call, before any shadow work: nothing else was written, and
    /// no tape was made. See [`PrimalDisagreement`].
    #[error("{0}")]
    PrimalDisagrees(Box<PrimalDisagreement>),
}

/// What the checked mode found after a primitive's call ([`Error::PrimalDisagrees`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrimalDisagreement {
    /// The primitive's name (empty for a rule the attribute did not generate).
    pub rule: &'static str,
    /// The destination parameter's name.
    pub param: &'static str,
    /// `None`: the call on the primals; `Some(k)`: the forward's call on lane `k`'s shadows.
    pub lane: Option<usize>,
    /// What the rule assumes the primitive wrote.
    pub assumed: Assumed,
    /// How many elements of the box disagree.
    pub count: u64,
    /// How many elements the box has.
    pub total: u64,
    /// The first few that disagree, as `(x, y, z)` in the box (column, row, slice).
    pub first: Vec<(usize, usize, usize)>,
    /// The box's shape: width, height, depth.
    pub shape: (usize, usize, usize),
}

/// What a rule assumes its primitive wrote in the destination's box.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Assumed {
    /// A copy: every element bitwise equal to the source box's (`src` names the parameter).
    Copy {
        /// The source parameter's name.
        src: &'static str,
    },
    /// A memset: one bit pattern, every element bitwise equal to the box's first.
    Memset,
    /// A fill: every element bitwise equal to the value.
    Fill {
        /// The value parameter's name.
        value: &'static str,
        /// The value, as `Debug` shows it.
        shown: String,
    },
}

impl fmt::Display for PrimalDisagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let param = self.param;
        match self.rule {
            "" => f.write_str("a rule's primitive")?,
            rule => write!(f, "`{rule}`")?,
        }
        f.write_str(" did not do what its rule assumes: after ")?;
        match self.lane {
            None => f.write_str("its call on the primals")?,
            Some(k) => write!(f, "its call on lane {k}'s shadows")?,
        }
        write!(
            f,
            ", {} of the {} elements of `{param}`'s box ",
            self.count, self.total
        )?;
        match &self.assumed {
            Assumed::Copy { src } => write!(
                f,
                "differ from `{src}`'s (a copy rule assumes `{param} == {src}` in the box, bitwise)"
            )?,
            Assumed::Memset => f.write_str(
                "differ from its first element (a memset rule assumes one repeated bit pattern)",
            )?,
            Assumed::Fill { value, shown } => write!(
                f,
                "differ from the value `{value}` = {shown} (a fill rule assumes `{param}[..] == {value}`)"
            )?,
        }
        let (_, h, d) = self.shape;
        f.write_str("; the first: ")?;
        for (i, &(x, y, z)) in self.first.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if h * d <= 1 {
                write!(f, "element {x}")?;
            } else if d <= 1 {
                write!(f, "(row {y}, column {x})")?;
            } else {
                write!(f, "(slice {z}, row {y}, column {x})")?;
            }
        }
        if self.count > self.first.len() as u64 {
            f.write_str(", ...")?;
        }
        f.write_str(". ")?;
        let part = "if the primitive writes only part of the buffer, give the rule that part: \
                    slice the buffer at the call, or take the pointer form with `#[dst_offset]` and \
                    `#[len]`, or a box (`#[width]`, `#[height]`, ...)";
        match &self.assumed {
            Assumed::Copy { .. } => write!(
                f,
                "The primitive left these elements alone or wrote other values there: {part}; \
                 if it computes values rather than copying them (scales, permutes, converts), it \
                 is not a copy, and a copy rule's derivative is wrong for it"
            )?,
            Assumed::Memset => write!(
                f,
                "The primitive left these elements alone or wrote another pattern there: {part}; \
                 if it writes values rather than one bit pattern, it is not a memset"
            )?,
            Assumed::Fill { .. } => write!(
                f,
                "The primitive left these elements alone or wrote other values there: {part}; \
                 if it writes something computed from the value (`2 * v`), it is not a fill, and \
                 a fill rule's derivative is wrong for it"
            )?,
        }
        f.write_str(". Nothing else was written (no shadow work, no tape).")
    }
}

impl Error {
    /// Wraps an error returned by the user's primal function (what generated rules do with it).
    /// A cudarc [`DriverError`], by value, boxed (`Box<DriverError>`, which `Into` boxes again)
    /// or in a `Box<dyn Error + Send + Sync>`, becomes a [`PrimalDriverError`]: cudarc's own
    /// `Display` and `Debug` ask the driver for its text and panic where the driver is missing,
    /// and this error must format everywhere.
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

/// A CUDA driver error returned by a user's primal (cudarc's [`DriverError`]), as
/// [`Error::Primal`] holds it. It names the code, e.g. `CUDA_ERROR_INVALID_VALUE`, and adds the
/// driver's description only when the driver is loaded: cudarc's own `Display` and `Debug` ask
/// the driver for it (`cuGetErrorString`) and panic where libcuda is missing. Its
/// [`source`](std::error::Error::source) is `None` for the same reason: the cudarc error is
/// [`PrimalDriverError::error`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PrimalDriverError(DriverError);

impl PrimalDriverError {
    /// The driver's result code.
    pub fn code(&self) -> cudarc::driver::sys::CUresult {
        self.0.0
    }

    /// cudarc's error (whose `Display` and `Debug` panic without the driver).
    pub fn error(&self) -> DriverError {
        self.0
    }
}

impl fmt::Display for PrimalDriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CUDA driver error {:?}", self.code())?;
        if !crate::driver::driver_available() {
            return f
                .write_str(" (the CUDA driver is not loaded, so it cannot describe this code)");
        }
        match self.0.error_string() {
            Ok(text) => write!(f, ": {}", text.to_string_lossy()),
            Err(_) => Ok(()),
        }
    }
}

impl fmt::Debug for PrimalDriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The code alone: it needs no driver to be named.
        f.debug_tuple("PrimalDriverError")
            .field(&self.code())
            .finish()
    }
}

impl std::error::Error for PrimalDriverError {}

/// `?` on a cudarc call in a function that returns [`Result`]: [`Error::Driver`], the driver's
/// text only where the driver is loaded (cudarc's `Display` asks it, and panics without it).
impl From<DriverError> for Error {
    fn from(e: DriverError) -> Self {
        crate::driver::driver("a cudarc call")(e)
    }
}

/// The cudarc [`DriverError`] that `e` is, by value or boxed.
fn driver_error_of(e: &(dyn std::error::Error + 'static)) -> Option<DriverError> {
    e.downcast_ref::<DriverError>()
        .or_else(|| e.downcast_ref::<Box<DriverError>>().map(|b| &**b))
        .copied()
}

/// Whether a cudarc [`DriverError`] is in the chain of `e`'s sources.
fn driver_error_below(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut link = e.source();
    while let Some(l) = link {
        if driver_error_of(l).is_some() {
            return true;
        }
        link = l.source();
    }
    false
}

/// The sources of a primal's error, for `Debug`: each by its `Display`, a cudarc
/// [`DriverError`] as [`PrimalDriverError`] shows it.
struct Sources<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Debug for Sources<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        let mut link = self.0.source();
        while let Some(l) = link {
            match driver_error_of(l) {
                Some(d) => list.entry(&PrimalDriverError(d)),
                None => list.entry(&l.to_string()),
            };
            link = l.source();
        }
        list.finish()
    }
}

/// Formats like a derived `Debug`, except that a primal's cudarc `DriverError` is shown as
/// [`PrimalDriverError`] shows it (cudarc's own `Debug` needs the driver).
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        macro_rules! fields {
            ($name:literal $(, $field:ident)*) => {
                f.debug_struct($name)$(.field(stringify!($field), $field))*.finish()
            };
        }
        match self {
            Error::NoDriver => f.write_str("NoDriver"),
            Error::NoDevice { ordinal, count } => fields!("NoDevice", ordinal, count),
            Error::LengthMismatch {
                what,
                expected,
                found,
            } => {
                fields!("LengthMismatch", what, expected, found)
            }
            Error::RangeOverflow { what, offset, len } => {
                fields!("RangeOverflow", what, offset, len)
            }
            Error::PartialOverlap {
                what,
                dst_start,
                dst_end,
                src_start,
                src_end,
            } => {
                fields!(
                    "PartialOverlap",
                    what,
                    dst_start,
                    dst_end,
                    src_start,
                    src_end
                )
            }
            Error::Aliasing {
                what,
                other,
                start,
                end,
            } => {
                fields!("Aliasing", what, other, start, end)
            }
            Error::TapeMismatch(why) => f.debug_tuple("TapeMismatch").field(why).finish(),
            Error::ContextMismatch {
                what,
                expected,
                found,
            } => {
                fields!("ContextMismatch", what, expected, found)
            }
            Error::BadRegion { what, why } => fields!("BadRegion", what, why),
            Error::UnsupportedKinds { op, dst, src, why } => {
                fields!("UnsupportedKinds", op, dst, src, why)
            }
            Error::NoStream(what) => f.debug_tuple("NoStream").field(what).finish(),
            Error::Capturing { op } => fields!("Capturing", op),
            Error::Driver { op, message } => fields!("Driver", op, message),
            Error::NoNccl => f.write_str("NoNccl"),
            Error::Nccl { op, code, message } => fields!("Nccl", op, code, message),
            Error::InvalidRank {
                what,
                rank,
                world_size,
            } => {
                fields!("InvalidRank", what, rank, world_size)
            }
            Error::NoPeerAccess { from, to } => fields!("NoPeerAccess", from, to),
            Error::PrimalDisagrees(d) => f.debug_tuple("PrimalDisagrees").field(d).finish(),
            Error::Primal(e) => match driver_error_of(&**e) {
                Some(d) => f
                    .debug_tuple("Primal")
                    .field(&PrimalDriverError(d))
                    .finish(),
                // The type's own `Debug` would show cudarc's (a derived one does).
                None if driver_error_below(&**e) => f
                    .debug_tuple("Primal")
                    .field(&e.to_string())
                    .field(&Sources(&**e))
                    .finish(),
                None => f.debug_tuple("Primal").field(e).finish(),
            },
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
mod tests {
    use super::*;
    use crate::rules::PrimalOutcome;
    use cudarc::driver::DriverError;
    use cudarc::driver::sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE;

    /// A primal's `DriverError`, as it reaches `Error::Primal`: by value, boxed, and through the
    /// generated code's conversion.
    fn primal_driver_errors() -> [Error; 3] {
        let boxed: PrimalError = Box::new(DriverError(CUDA_ERROR_INVALID_VALUE));
        let returned: core::result::Result<(), DriverError> =
            Err(DriverError(CUDA_ERROR_INVALID_VALUE));
        [
            Error::primal(DriverError(CUDA_ERROR_INVALID_VALUE)),
            Error::primal(boxed),
            returned.into_result().unwrap_err(),
        ]
    }

    #[test]
    fn a_primals_driver_error_formats_without_the_driver() {
        // cudarc's `DriverError` asks the driver for its text when formatted (Display and
        // Debug), which panics where libcuda is missing: this machine, when it has no driver.
        for e in primal_driver_errors() {
            let shown = format!("{e}");
            assert!(shown.contains("CUDA_ERROR_INVALID_VALUE"), "{shown}");
            let debug = format!("{e:?}");
            assert!(debug.contains("CUDA_ERROR_INVALID_VALUE"), "{debug}");
            // The chain: the primal's error is the source, names the code, and gives back
            // cudarc's error.
            let source = std::error::Error::source(&e).expect("a source");
            assert!(source.to_string().contains("CUDA_ERROR_INVALID_VALUE"));
            let held = source
                .downcast_ref::<PrimalDriverError>()
                .expect("held as such");
            assert_eq!(held.code(), CUDA_ERROR_INVALID_VALUE);
            assert_eq!(held.error(), DriverError(CUDA_ERROR_INVALID_VALUE));
            assert!(std::error::Error::source(held).is_none());
        }
    }

    /// The error shapes a primitive can return, each from a rule the attribute generates (a host
    /// copy that fails): the rule's `Error` formats (`Display` and `Debug`) without the driver.
    mod shapes {
        use super::*;
        use crate::{Const, CopyRule, derivative_rule};

        fn invalid() -> DriverError {
            DriverError(CUDA_ERROR_INVALID_VALUE)
        }

        /// A user's error type: its own text, the driver's error as its `source()`, and a derived
        /// `Debug` (which shows cudarc's `Debug` of the field: that one needs the driver).
        #[derive(Debug)]
        pub struct Upload {
            n: usize,
            cause: DriverError,
        }
        impl fmt::Display for Upload {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "the upload of {} elements failed", self.n)
            }
        }
        impl std::error::Error for Upload {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.cause)
            }
        }

        #[derivative_rule(copy, crate = crate)]
        fn by_value(
            #[dst] _d: &mut [f32],
            #[src] _s: &[f32],
        ) -> core::result::Result<(), DriverError> {
            Err(invalid())
        }
        #[derivative_rule(copy, crate = crate)]
        fn boxed(
            #[dst] _d: &mut [f32],
            #[src] _s: &[f32],
        ) -> core::result::Result<(), Box<DriverError>> {
            Err(Box::new(invalid()))
        }
        #[derivative_rule(copy, crate = crate)]
        fn dyn_boxed(
            #[dst] _d: &mut [f32],
            #[src] _s: &[f32],
        ) -> core::result::Result<(), PrimalError> {
            Err(Box::new(invalid()))
        }
        #[derivative_rule(copy, crate = crate)]
        fn text(#[dst] _d: &mut [f32], #[src] _s: &[f32]) -> core::result::Result<(), String> {
            Err("no room".to_string())
        }
        #[derivative_rule(copy, crate = crate)]
        fn custom(#[dst] _d: &mut [f32], #[src] _s: &[f32]) -> core::result::Result<(), Upload> {
            Err(Upload {
                n: 3,
                cause: invalid(),
            })
        }
        #[derivative_rule(copy, crate = crate)]
        fn custom_boxed(
            #[dst] _d: &mut [f32],
            #[src] _s: &[f32],
        ) -> core::result::Result<(), PrimalError> {
            Err(Box::new(Upload {
                n: 3,
                cause: invalid(),
            }))
        }

        /// `?` on a cudarc call inside a primitive that returns the runtime's `Result`.
        #[derivative_rule(copy, crate = crate)]
        fn question_mark(#[dst] _d: &mut [f32], #[src] _s: &[f32]) -> Result<()> {
            Err(invalid())?;
            Ok(())
        }

        /// Runs `rule`'s forward (the primitive on the primals) and returns its error.
        fn fails<'s>(mut rule: impl CopyRule<'s, [f32], [f32]>) -> Error {
            let (mut y, x) = ([0.0f32; 3], [1.0f32; 3]);
            rule.forward(Const(&mut y[..]), Const(&x[..]))
                .expect_err("the primitive fails")
        }

        #[test]
        fn every_error_shape_of_a_primal_formats_without_the_driver() {
            // (the rule's error, what its Display and Debug must both show)
            let cases = [
                (fails(by_value_rule()), "CUDA_ERROR_INVALID_VALUE"),
                (fails(boxed_rule()), "CUDA_ERROR_INVALID_VALUE"),
                (fails(dyn_boxed_rule()), "CUDA_ERROR_INVALID_VALUE"),
                (
                    Error::primal(Box::new(invalid())),
                    "CUDA_ERROR_INVALID_VALUE",
                ),
                (fails(text_rule()), "no room"),
                (fails(custom_rule()), "the upload of 3 elements failed"),
                (
                    fails(custom_boxed_rule()),
                    "the upload of 3 elements failed",
                ),
                (fails(question_mark_rule()), "CUDA_ERROR_INVALID_VALUE"),
            ];
            for (e, want) in cases {
                assert!(
                    matches!(e, Error::Primal(_)),
                    "a primal's error is `Primal`"
                );
                // Without the driver (this machine, CI), cudarc's own formatting panics.
                let shown = format!("{e}");
                assert!(shown.starts_with("the primal copy failed: "), "{shown}");
                assert!(shown.contains(want), "{shown}");
                let debug = format!("{e:?}");
                assert!(debug.starts_with("Primal("), "{debug}");
                assert!(debug.contains(want), "{debug}");
            }
        }

        #[test]
        fn question_mark_on_a_cudarc_call_is_a_driver_error_outside_a_rule_and_primal_inside() {
            fn users_code() -> Result<()> {
                Err(invalid())?;
                Ok(())
            }
            let e = users_code().unwrap_err();
            let Error::Driver { op, .. } = &e else {
                panic!("{e:?}")
            };
            assert_eq!(*op, "a cudarc call");
            assert!(
                format!("{e} {e:?}").contains("CUDA_ERROR_INVALID_VALUE"),
                "{e:?}"
            );
            // The same error raised by a primitive is the primal's: its rule says so.
            let e = fails(question_mark_rule());
            let Error::Primal(held) = &e else {
                panic!("{e:?}")
            };
            assert!(matches!(
                held.downcast_ref::<Error>(),
                Some(Error::Driver { .. })
            ));
        }

        #[test]
        fn a_driver_error_under_a_primals_own_error_shows_its_code_in_debug() {
            for e in [fails(custom_rule()), fails(custom_boxed_rule())] {
                let debug = format!("{e:?}");
                assert!(debug.contains("CUDA_ERROR_INVALID_VALUE"), "{debug}");
            }
        }
    }

    #[test]
    fn other_primal_errors_are_held_as_they_are() {
        let e = Error::primal(std::io::Error::other("disk full"));
        let Error::Primal(held) = &e else {
            panic!("{e:?}")
        };
        assert!(held.downcast_ref::<std::io::Error>().is_some());
        assert_eq!(e.to_string(), "the primal copy failed: disk full");
    }
}
