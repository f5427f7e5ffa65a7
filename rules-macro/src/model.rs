//! The macro's vocabulary: rule kinds, parameter roles, memory kinds and the attribute's keywords,
//! each parsed once from its text into an enum. A leaf: it depends on nothing else in the crate,
//! and every stage reads the words from here, so a word is spelled in one place.
//!
//! - here: the rule kinds ([`Kind`]), the attribute's arguments and the memory kinds ([`MemKind`]);
//! - [`role`]: the parameter roles ([`Role`]), the words on a rule's parameters.

mod role;

pub use role::{BUILTIN_ATTRIBUTES, CFG, DOC, ROLE_SYNONYMS, Role};

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
/// `autodiff` / `autodiff(f32, f64)`: also generate the bridges for Rust's `std::autodiff`
/// (Enzyme), emitted with the runtime's `autodiff` feature, with the element types of a generic
/// rule.
pub const AUTODIFF: &str = "autodiff";
/// Every flag argument (a bare word that is not a kind).
pub const FLAGS: &[&str] = &[IN_IMPL, RESTORE, AUTODIFF];
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
