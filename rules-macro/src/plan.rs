//! The plan: what the checks hand to the generator and to the docs builder, one type for every
//! rule kind. It holds indices into the rule's parameters and the types the checks read, never a
//! second copy of the rule.

use crate::model::{Kind, MemKind};
use syn::Type;

/// A checked rule, ready to be generated.
pub struct Plan {
    /// The rule kind.
    pub kind: Kind,
    /// The output buffer, for kinds that have one.
    pub dst: Option<Buffer>,
    /// The input buffer, for kinds that have one.
    pub src: Option<Buffer>,
    /// How the buffers are reached: references or raw pointers.
    pub access: Access,
    /// What orders the shadow work after the primal.
    pub order: Order,
    /// Whether the generated rules are `unsafe fn`.
    pub unsafety: bool,
    /// A fill's value taken by value (a value in a buffer is the plan's `src`).
    pub value: Option<Buffer>,
    /// The box roles of a region rule (all `None` for a whole-buffer rule).
    pub region: Region,
    /// `restore`: the reverse writes the destination's old box back.
    pub restore: bool,
}

/// The parameters that give a region rule's boxes (indices), as the runtime's `Pitched` takes
/// them.
#[derive(Default)]
pub struct Region {
    /// `#[width]`.
    pub width: Option<usize>,
    /// `#[height]`.
    pub height: Option<usize>,
    /// `#[depth]`.
    pub depth: Option<usize>,
    /// `#[dst_pitch]`.
    pub dst_pitch: Option<usize>,
    /// `#[src_pitch]`.
    pub src_pitch: Option<usize>,
    /// `#[dst_slice_height]`.
    pub dst_slice_height: Option<usize>,
    /// `#[src_slice_height]`.
    pub src_slice_height: Option<usize>,
    /// `#[dst_x]`, `#[dst_y]`, `#[dst_z]`: where the destination's box starts in its CUDA array.
    pub dst_origin: [Option<usize>; 3],
    /// `#[src_x]`, `#[src_y]`, `#[src_z]`: where the source's box starts in its CUDA array.
    pub src_origin: [Option<usize>; 3],
    /// The destination is a CUDA array (`&mut CudaArray<T>`).
    pub dst_array: bool,
    /// The source is a CUDA array (`&CudaArray<T>`).
    pub src_array: bool,
}

impl Region {
    /// Whether either side is a CUDA array.
    pub fn has_array(&self) -> bool {
        self.dst_array || self.src_array
    }
}

/// A buffer parameter.
pub struct Buffer {
    /// Its index among the rule's parameters.
    pub param: usize,
    /// What the generated rules take activities of: the pointee `X` of `&mut X` / `&X`, or the
    /// element `T` of `*mut T` / `*const T`.
    pub ty: Type,
}

/// How a rule reaches its buffers.
pub enum Access {
    /// References to buffers that know their length and memory kind.
    Slice,
    /// Raw pointers, with the memory kinds the attribute declares and the extent in parameters.
    Pointer(Extent),
}

/// The memory kinds and extent of a pointer rule.
pub struct Extent {
    /// Declared kind of the destination.
    pub dst_kind: MemKind,
    /// Declared kind of the source.
    pub src_kind: MemKind,
    /// Index of `#[len]` (region rules give rows instead, or nothing).
    pub len: Option<usize>,
    /// Index of `#[dst_offset]`, if any.
    pub dst_offset: Option<usize>,
    /// Index of `#[src_offset]`, if any.
    pub src_offset: Option<usize>,
}

/// What orders the shadow work after the primal.
pub enum Order {
    /// A copy: the stream parameter, or the host when there is none.
    Stream(Option<usize>),
    /// A collective: the communicator, and the ranks in the order the runtime takes them.
    Comm {
        /// Index of the communicator parameter.
        comm: usize,
        /// Indices of the rank parameters.
        ranks: Vec<usize>,
    },
}

impl Plan {
    /// The pointer rule's extent, if it is one.
    pub fn extent(&self) -> Option<&Extent> {
        match &self.access {
            Access::Pointer(e) => Some(e),
            Access::Slice => None,
        }
    }

    /// Whether the rules are region rules (their bodies work on boxes): the region kinds, a copy
    /// with `restore`, and a copy of a whole CUDA array.
    pub fn is_region(&self) -> bool {
        self.kind.is_region() || self.restore || self.region.has_array()
    }

    /// The indices of the buffer parameters.
    pub fn buffer_params(&self) -> [Option<usize>; 2] {
        [
            self.dst.as_ref().map(|b| b.param),
            self.src.as_ref().map(|b| b.param),
        ]
    }
}
