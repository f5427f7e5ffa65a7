//! The macro's vocabulary: rule kinds, parameter roles, memory kinds and the attribute's keywords,
//! each parsed once from its text into an enum. A leaf: it depends on nothing else in the crate,
//! and every stage reads the words from here, so a word is spelled in one place.

/// `#[derivative_rule(copy)]`: `dst ← src`, also between devices (a peer copy).
pub const COPY: &str = "copy";
/// `#[derivative_rule(broadcast)]`: NCCL broadcast from `#[root]`.
pub const BROADCAST: &str = "broadcast";
/// `#[derivative_rule(reduce)]`: NCCL reduce (sum) to `#[root]`.
pub const REDUCE: &str = "reduce";
/// `#[derivative_rule(all_gather)]`: NCCL all-gather.
pub const ALL_GATHER: &str = "all_gather";
/// `#[derivative_rule(reduce_scatter)]`: NCCL reduce-scatter (sum).
pub const REDUCE_SCATTER: &str = "reduce_scatter";
/// `#[derivative_rule(all_reduce)]`: NCCL all-reduce (sum).
pub const ALL_REDUCE: &str = "all_reduce";
/// `#[derivative_rule(send)]`: NCCL send to `#[peer]`.
pub const SEND: &str = "send";
/// `#[derivative_rule(recv)]`: NCCL receive from `#[peer]`.
pub const RECV: &str = "recv";
/// `#[derivative_rule(send_recv)]`: NCCL send to `#[send_to]` and receive from `#[recv_from]`.
pub const SEND_RECV: &str = "send_recv";
/// `#[derivative_rule(memset)]`: a region set to a bit pattern (not differentiable).
pub const MEMSET: &str = "memset";
/// `#[derivative_rule(fill)]`: a region set to a typed `#[value]`.
pub const FILL: &str = "fill";
/// `#[derivative_rule(copy2d)]`: a pitched 2-D copy.
pub const COPY2D: &str = "copy2d";
/// `#[derivative_rule(copy3d)]`: a pitched 3-D copy.
pub const COPY3D: &str = "copy3d";

/// A rule kind: which derivative semantics the generated rules implement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `dst ← src`.
    Copy,
    /// `y ← x` of the root.
    Broadcast,
    /// `y (root) ← Σ x`.
    Reduce,
    /// `y ← [x of every rank]`.
    AllGather,
    /// `y ← chunk of Σ x`.
    ReduceScatter,
    /// `y ← Σ x`.
    AllReduce,
    /// `x` to a peer.
    Send,
    /// `y ←` from a peer.
    Recv,
    /// Both, in one group.
    SendRecv,
    /// `dst[R] ←` a bit pattern.
    Memset,
    /// `dst[R] ← v`.
    Fill,
    /// `dst[R] ← src[R']`, boxes of `height` rows.
    Copy2d,
    /// `dst[R] ← src[R']`, boxes of `depth` slices of `height` rows.
    Copy3d,
}

impl Kind {
    /// Every kind, in the order messages list them.
    pub const ALL: &[Kind] = &[
        Kind::Copy,
        Kind::Broadcast,
        Kind::Reduce,
        Kind::AllGather,
        Kind::ReduceScatter,
        Kind::AllReduce,
        Kind::Send,
        Kind::Recv,
        Kind::SendRecv,
        Kind::Memset,
        Kind::Fill,
        Kind::Copy2d,
        Kind::Copy3d,
    ];

    /// The kind a word names.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// The kind as the attribute spells it (and as the runtime's constructor is named).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Copy => COPY,
            Kind::Broadcast => BROADCAST,
            Kind::Reduce => REDUCE,
            Kind::AllGather => ALL_GATHER,
            Kind::ReduceScatter => REDUCE_SCATTER,
            Kind::AllReduce => ALL_REDUCE,
            Kind::Send => SEND,
            Kind::Recv => RECV,
            Kind::SendRecv => SEND_RECV,
            Kind::Memset => MEMSET,
            Kind::Fill => FILL,
            Kind::Copy2d => COPY2D,
            Kind::Copy3d => COPY3D,
        }
    }

    /// Whether the kind works on a box of its destination (a region rule).
    pub fn is_region(self) -> bool {
        matches!(
            self,
            Kind::Memset | Kind::Fill | Kind::Copy2d | Kind::Copy3d
        )
    }

    /// Whether the kind is a pitched copy.
    pub fn is_pitched(self) -> bool {
        matches!(self, Kind::Copy2d | Kind::Copy3d)
    }

    /// Whether the kind is an NCCL collective (ordered by a communicator, not a stream).
    pub fn is_collective(self) -> bool {
        !self.is_region() && self != Kind::Copy
    }

    /// The names of the accepted kinds, for messages.
    pub fn supported() -> Vec<&'static str> {
        Kind::ALL.iter().map(|k| k.name()).collect()
    }

    /// Whether the rule has an output buffer (`#[dst]`).
    pub fn has_dst(self) -> bool {
        self != Kind::Send
    }

    /// Whether the rule has an input buffer (`#[src]`).
    pub fn has_src(self) -> bool {
        !matches!(self, Kind::Recv | Kind::Memset | Kind::Fill)
    }

    /// Whether the rule's methods take one activity (a memset's destination, a send's input, a
    /// receive's output) rather than two.
    pub fn one_buffer(self) -> bool {
        matches!(self, Kind::Memset | Kind::Send | Kind::Recv)
    }

    /// The rank roles the rule takes, in the order the runtime's constructor takes them.
    pub fn ranks(self) -> &'static [Role] {
        match self {
            Kind::Broadcast | Kind::Reduce => &[Role::Root],
            Kind::Send | Kind::Recv => &[Role::Peer],
            Kind::SendRecv => &[Role::SendTo, Role::RecvFrom],
            _ => &[],
        }
    }

    /// The collective whose derivative rules are this one's adjoint, in words.
    pub fn adjoint(self) -> &'static str {
        match self {
            Kind::Broadcast => "reduce (sum) to the root",
            Kind::Reduce => "broadcast from the root",
            Kind::AllGather => "reduce-scatter (sum)",
            Kind::ReduceScatter => "all-gather",
            Kind::AllReduce => "all-reduce (sum), its own adjoint",
            Kind::Send => "receive from the peer, then accumulate",
            Kind::Recv => "send back to the peer, then zero",
            Kind::SendRecv => "send_recv with the two peers swapped, then accumulate",
            _ => "",
        }
    }

    /// "a copy rule", "an `all_gather` rule": the rule, in words.
    pub fn noun(self) -> String {
        if self == Kind::Copy {
            return "a copy rule".to_string();
        }
        if self.is_pitched() {
            return format!("a pitched copy (`{}`)", self.name());
        }
        let article = if self.name().starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        format!("{article} `{}` rule", self.name())
    }

    /// The collectives that take a rank role, for messages.
    pub fn with_rank(role: Role) -> Vec<&'static str> {
        Kind::ALL
            .iter()
            .filter(|k| k.is_collective() && k.ranks().contains(&role))
            .map(|k| k.name())
            .collect()
    }
}

/// Other names for the kinds, as NCCL, MPI and other libraries spell them, with the advice.
pub const KIND_SYNONYMS: &[(&str, &str)] = &[
    ("bcast", "did you mean `broadcast`?"),
    ("allgather", "did you mean `all_gather`?"),
    ("allreduce", "did you mean `all_reduce`?"),
    ("reducescatter", "did you mean `reduce_scatter`?"),
    ("receive", "did you mean `recv`?"),
    ("sendrecv", "did you mean `send_recv`?"),
    (
        "peer_copy",
        "a copy between devices is a `copy` rule: write `#[derivative_rule(copy)]`; its reverse accumulates across devices",
    ),
];

/// `crate = path`: where the runtime is, for users who renamed it.
pub const CRATE: &str = "crate";
/// `dst = kind`: the memory kind a raw destination pointer points into.
pub const DST: &str = "dst";
/// `src = kind`: the memory kind a raw source pointer points into.
pub const SRC: &str = "src";
/// `rule = name`: the name of the generated rule item (`<name>_rule` by default).
pub const RULE: &str = "rule";
/// Every `key = value` argument.
pub const ARG_KEYS: &[&str] = &[CRATE, DST, SRC, RULE];
/// Keys of an earlier version, each named after one generated function: there is one generated
/// item now, whose methods are the three rules.
pub const OLD_NAME_KEYS: &[&str] = &["forward", "augmented_primal", "reverse"];
/// `in_impl`: a flag, the rule is an associated function of an inherent `impl` block.
pub const IN_IMPL: &str = "in_impl";
/// `restore`: a flag, the reverse writes the destination's old contents back.
pub const RESTORE: &str = "restore";
/// Every flag argument (a bare word that is not a kind).
pub const FLAGS: &[&str] = &[IN_IMPL, RESTORE];
/// The runtime's default path.
pub const DEFAULT_CRATE: &str = "rules_runtime";

/// `host`: pageable host memory.
pub const HOST: &str = "host";
/// `pinned`: page-locked host memory.
pub const PINNED: &str = "pinned";
/// `device`: device memory.
pub const DEVICE: &str = "device";
/// `unified`: unified (managed) memory.
pub const UNIFIED: &str = "unified";
/// Memory kinds a raw pointer can declare.
pub const MEMORY_KINDS: &[&str] = &[HOST, PINNED, DEVICE, UNIFIED];
/// Other names for the memory kinds, as CUDA and other libraries spell them.
pub const MEMORY_KIND_SYNONYMS: &[(&str, &str)] = &[
    ("cpu", HOST),
    ("pageable", HOST),
    ("gpu", DEVICE),
    ("cuda", DEVICE),
    ("page_locked", PINNED),
    ("locked", PINNED),
    ("managed", UNIFIED),
    ("shared", UNIFIED),
];

/// A memory kind named in the attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    /// Pageable host memory.
    Host,
    /// Pinned host memory.
    Pinned,
    /// Device memory.
    Device,
    /// Unified memory.
    Unified,
}

impl MemKind {
    /// The kind a word names.
    pub fn from_name(name: &str) -> Option<MemKind> {
        Some(match name {
            HOST => MemKind::Host,
            PINNED => MemKind::Pinned,
            DEVICE => MemKind::Device,
            UNIFIED => MemKind::Unified,
            _ => return None,
        })
    }

    /// The attribute's word for the kind (also the runtime's `MemoryKind` variant, capitalised).
    pub fn name(self) -> &'static str {
        match self {
            MemKind::Host => HOST,
            MemKind::Pinned => PINNED,
            MemKind::Device => DEVICE,
            MemKind::Unified => UNIFIED,
        }
    }
}

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
