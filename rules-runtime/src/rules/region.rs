//! What the region rules share (pitched copies, memsets, fills, and any rule with `restore`):
//! the boxes a call names, the check of a whole call before its first write, and the tape.
//!
//! A call is checked as a whole: every box against every buffer it lands on (the primals and
//! every lane's shadows, which have their primal's layout), how the boxes overlap row interval by
//! row interval, and where each lane's shadow work will run. Only then is anything written.
//!
//! - here: the boxes as the generated code names them ([`Boxes`], [`Origin`]);
//! - [`side`]: one side of a call (`dst` or `src`), for slice rules and for pointer rules
//!   ([`RawRegion`]);
//! - [`check`]: the whole-call check ([`check_call`]): boxes resolved and placed, overlaps judged,
//!   routes checked, the call fingerprinted;
//! - [`tape`]: [`RegionTape`], what the augmented primal hands to the reverse.

mod check;
mod side;
mod tape;

pub(crate) use check::{Checked, check_call};
pub use side::RawRegion;
pub(crate) use side::{Dst, Raw, Side, Src};
pub(crate) use tape::Kind;
pub use tape::RegionTape;

use crate::region::Pitched;

/// Where a box starts in a CUDA array: `(x, y, z)` in elements, as `cuMemcpy3D`'s
/// `srcXInBytes / size_of::<T>()`, `srcY`, `srcZ` count it.
pub type Origin = (usize, usize, usize);

/// The boxes of a region rule's call, as the generated code names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boxes {
    /// The destination's box; `None`: the whole destination.
    pub dst: Option<Pitched>,
    /// The source's box; `None`: the whole source.
    pub src: Option<Pitched>,
    /// The source is a fill's value, a one-element buffer, not a box of the destination's shape.
    pub value: bool,
    /// The destination is a CUDA array and its box starts here: only the shape of `dst` counts,
    /// its offset and pitches are the array's own (resolved when the call is checked).
    pub dst_at: Option<Origin>,
    /// As `dst_at`, for the source.
    pub src_at: Option<Origin>,
}

impl Boxes {
    /// Whole buffers of equal lengths (a copy with `restore`, a memset or fill of a whole slice,
    /// a copy of a whole CUDA array: its box is the array's extent).
    pub const WHOLE: Boxes = Boxes {
        dst: None,
        src: None,
        value: false,
        dst_at: None,
        src_at: None,
    };

    /// Two boxes of one shape (a pitched copy).
    pub const fn copy(dst: Pitched, src: Pitched) -> Self {
        Boxes {
            dst: Some(dst),
            src: Some(src),
            ..Boxes::WHOLE
        }
    }

    /// One box of the destination (a memset or a fill).
    pub const fn dst(dst: Pitched) -> Self {
        Boxes {
            dst: Some(dst),
            ..Boxes::WHOLE
        }
    }

    /// A fill of `dst` (`None`: all of it) from a value held in a one-element buffer.
    pub const fn from_value(dst: Option<Pitched>) -> Self {
        Boxes {
            dst,
            value: true,
            ..Boxes::WHOLE
        }
    }

    /// The destination is a CUDA array, its box at `(x, y, z)` elements; the box given for it
    /// says only its shape (width, height, depth).
    pub const fn dst_in_array(mut self, x: usize, y: usize, z: usize) -> Self {
        self.dst_at = Some((x, y, z));
        self
    }

    /// The source is a CUDA array, its box at `(x, y, z)` elements; as [`Self::dst_in_array`].
    pub const fn src_in_array(mut self, x: usize, y: usize, z: usize) -> Self {
        self.src_at = Some((x, y, z));
        self
    }
}
