//! The parameter roles: the attributes on a rule's parameters (`#[dst]`, `#[len]`, `#[stream]`,
//! ...), with the groups the checks ask about (extents, origins, ranks), their words in messages,
//! and the names users are likely to mean by them.

/// The role of a parameter, as its attribute names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `#[dst]`: the destination buffer or pointer.
    Dst,
    /// `#[src]`: the source buffer or pointer.
    Src,
    /// `#[len]`: the element count of a pointer copy.
    Len,
    /// `#[dst_offset]`: the destination offset of a pointer copy.
    DstOffset,
    /// `#[src_offset]`: the source offset of a pointer copy.
    SrcOffset,
    /// `#[stream]`: the CUDA stream the copy runs on.
    Stream,
    /// `#[comm]`: the NCCL communicator of a collective.
    Comm,
    /// `#[root]`: the root rank of a broadcast or reduce.
    Root,
    /// `#[peer]`: the other rank of a send or recv.
    Peer,
    /// `#[send_to]`: the rank a send_recv sends to.
    SendTo,
    /// `#[recv_from]`: the rank a send_recv receives from.
    RecvFrom,
    /// `#[width]`: elements per row of a region.
    Width,
    /// `#[height]`: rows of a region.
    Height,
    /// `#[depth]`: slices of a 3-D region.
    Depth,
    /// `#[dst_pitch]`: bytes between the destination's rows.
    DstPitch,
    /// `#[src_pitch]`: bytes between the source's rows.
    SrcPitch,
    /// `#[dst_slice_height]`: rows between the destination's slices.
    DstSliceHeight,
    /// `#[src_slice_height]`: rows between the source's slices.
    SrcSliceHeight,
    /// `#[value]`: the value of a fill.
    Value,
    /// `#[dst_x]`: the column (in elements) where the destination's box starts in its CUDA array.
    DstX,
    /// `#[dst_y]`: the row where the destination's box starts in its CUDA array.
    DstY,
    /// `#[dst_z]`: the slice where the destination's box starts in its CUDA array.
    DstZ,
    /// `#[src_x]`: the column (in elements) where the source's box starts in its CUDA array.
    SrcX,
    /// `#[src_y]`: the row where the source's box starts in its CUDA array.
    SrcY,
    /// `#[src_z]`: the slice where the source's box starts in its CUDA array.
    SrcZ,
    /// `#[inert]`: a parameter that changes neither which elements the primitive writes nor
    /// their values (a label, a counter, a transfer's chunk size): passed through, and the
    /// user's word that the rule may ignore it.
    Inert,
}

impl Role {
    /// Every role, in the order messages list them.
    pub const ALL: &[Role] = &[
        Role::Dst,
        Role::Src,
        Role::Len,
        Role::DstOffset,
        Role::SrcOffset,
        Role::Stream,
        Role::Comm,
        Role::Root,
        Role::Peer,
        Role::SendTo,
        Role::RecvFrom,
        Role::Width,
        Role::Height,
        Role::Depth,
        Role::DstPitch,
        Role::SrcPitch,
        Role::DstSliceHeight,
        Role::SrcSliceHeight,
        Role::Value,
        Role::DstX,
        Role::DstY,
        Role::DstZ,
        Role::SrcX,
        Role::SrcY,
        Role::SrcZ,
        Role::Inert,
    ];
    /// The extent roles of region rules (each a `usize`).
    pub const EXTENTS: &[Role] = &[
        Role::Width,
        Role::Height,
        Role::Depth,
        Role::DstPitch,
        Role::SrcPitch,
        Role::DstSliceHeight,
        Role::SrcSliceHeight,
    ];
    /// The origin roles of a box in a CUDA array (each a `usize`): the destination's x, y, z,
    /// then the source's.
    pub const ORIGINS: &[Role] = &[
        Role::DstX,
        Role::DstY,
        Role::DstZ,
        Role::SrcX,
        Role::SrcY,
        Role::SrcZ,
    ];
    /// The rank roles of collectives.
    pub const RANKS: &[Role] = &[Role::Root, Role::Peer, Role::SendTo, Role::RecvFrom];

    /// The attribute's name, without `#[...]`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Dst => "dst",
            Role::Src => "src",
            Role::Len => "len",
            Role::DstOffset => "dst_offset",
            Role::SrcOffset => "src_offset",
            Role::Stream => "stream",
            Role::Comm => "comm",
            Role::Root => "root",
            Role::Peer => "peer",
            Role::SendTo => "send_to",
            Role::RecvFrom => "recv_from",
            Role::Width => "width",
            Role::Height => "height",
            Role::Depth => "depth",
            Role::DstPitch => "dst_pitch",
            Role::SrcPitch => "src_pitch",
            Role::DstSliceHeight => "dst_slice_height",
            Role::SrcSliceHeight => "src_slice_height",
            Role::Value => "value",
            Role::DstX => "dst_x",
            Role::DstY => "dst_y",
            Role::DstZ => "dst_z",
            Role::SrcX => "src_x",
            Role::SrcY => "src_y",
            Role::SrcZ => "src_z",
            Role::Inert => "inert",
        }
    }

    /// The role an attribute name names.
    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.iter().copied().find(|r| r.name() == name)
    }

    /// The names of every role, for suggestions.
    pub fn names() -> Vec<&'static str> {
        Role::ALL.iter().map(|r| r.name()).collect()
    }

    /// The attribute spelling, e.g. `#[dst]`.
    pub fn attr(self) -> String {
        format!("#[{}]", self.name())
    }

    /// What the role's parameter is, in words.
    pub fn noun(self) -> &'static str {
        match self {
            Role::Dst => "destination",
            Role::Src => "source",
            Role::Len => "length",
            Role::DstOffset => "destination offset",
            Role::SrcOffset => "source offset",
            Role::Stream => "stream",
            Role::Comm => "communicator",
            Role::Root => "root rank",
            Role::Peer => "peer rank",
            Role::SendTo => "rank to send to",
            Role::RecvFrom => "rank to receive from",
            Role::Width => "width (elements per row)",
            Role::Height => "height (rows)",
            Role::Depth => "depth (slices)",
            Role::DstPitch => "destination pitch (bytes between rows)",
            Role::SrcPitch => "source pitch (bytes between rows)",
            Role::DstSliceHeight => "destination slice height (rows between slices)",
            Role::SrcSliceHeight => "source slice height (rows between slices)",
            Role::Value => "value",
            Role::DstX => "destination's x (the column its box starts at in its CUDA array)",
            Role::DstY => "destination's y (the row its box starts at in its CUDA array)",
            Role::DstZ => "destination's z (the slice its box starts at in its CUDA array)",
            Role::SrcX => "source's x (the column its box starts at in its CUDA array)",
            Role::SrcY => "source's y (the row its box starts at in its CUDA array)",
            Role::SrcZ => "source's z (the slice its box starts at in its CUDA array)",
            Role::Inert => {
                "inert parameter (one that changes neither which elements are written nor their values)"
            }
        }
    }

    /// For an origin role: whether it places the destination's box (else the source's), and
    /// its axis (0, 1, 2 for x, y, z).
    pub fn origin(self) -> Option<(bool, usize)> {
        Some(match self {
            Role::DstX => (true, 0),
            Role::DstY => (true, 1),
            Role::DstZ => (true, 2),
            Role::SrcX => (false, 0),
            Role::SrcY => (false, 1),
            Role::SrcZ => (false, 2),
            _ => return None,
        })
    }

    /// The origin role of a side (`dst`: true) and an axis (0, 1, 2).
    pub fn origin_of(dst: bool, axis: usize) -> Role {
        let side = if dst {
            [Role::DstX, Role::DstY, Role::DstZ]
        } else {
            [Role::SrcX, Role::SrcY, Role::SrcZ]
        };
        side[axis.min(2)]
    }
}

/// Attribute names that are likely meant as roles, with the role they mean (`None`: ambiguous).
pub const ROLE_SYNONYMS: &[(&str, Option<Role>)] = &[
    ("dest", Some(Role::Dst)),
    ("destination", Some(Role::Dst)),
    ("out", Some(Role::Dst)),
    ("output", Some(Role::Dst)),
    ("to", Some(Role::Dst)),
    ("source", Some(Role::Src)),
    ("input", Some(Role::Src)),
    ("from", Some(Role::Src)),
    ("length", Some(Role::Len)),
    ("count", Some(Role::Len)),
    ("n", Some(Role::Len)),
    ("offset", None),
    ("communicator", Some(Role::Comm)),
    ("nccl", Some(Role::Comm)),
    ("root_rank", Some(Role::Root)),
    ("rank", None),
    ("pitch", None),
    ("rows", Some(Role::Height)),
    ("cols", Some(Role::Width)),
    ("columns", Some(Role::Width)),
    ("slices", Some(Role::Depth)),
    ("val", Some(Role::Value)),
];

/// `#[cfg(...)]`: the one foreign parameter attribute the generated rules repeat.
pub const CFG: &str = "cfg";
/// `#[doc = "..."]`, a doc comment: taken off a parameter into the rule item's documentation.
pub const DOC: &str = "doc";

/// The compiler's own attributes (and the doc comment's `doc`): on a parameter they are someone
/// else's, kept as they are, and never read as a misspelled role (`#[doc]` is two edits from
/// `#[dst]`, `#[deny]` from `#[len]`).
pub const BUILTIN_ATTRIBUTES: &[&str] = &[
    "allow",
    "automatically_derived",
    "cfg",
    "cfg_attr",
    "cold",
    "collapse_debuginfo",
    "deny",
    "deprecated",
    "diagnostic",
    "doc",
    "expect",
    "export_name",
    "forbid",
    "global_allocator",
    "ignore",
    "inline",
    "instruction_set",
    "link",
    "link_name",
    "link_section",
    "macro_export",
    "macro_use",
    "must_use",
    "no_mangle",
    "non_exhaustive",
    "panic_handler",
    "path",
    "proc_macro",
    "proc_macro_attribute",
    "proc_macro_derive",
    "repr",
    "should_panic",
    "target_feature",
    "test",
    "track_caller",
    "unsafe",
    "used",
    "warn",
];
