//! The documentation of the generated rules: what each one does, how to call it, its errors and,
//! for `unsafe` rules, its safety contract.

use crate::args::{Collective, DEVICE, HOST, MemKind, PINNED, UNIFIED};
use crate::check::{Checked, Shape};
use std::fmt::Write;
use syn::Ident;

/// The documentation of the generated rules.
pub struct Docs {
    primal: String,
    /// The declared kinds of `dst` and `src`, for a pointer rule.
    kinds: Option<(MemKind, MemKind)>,
    /// Whether the rule has a stream (its work may still run when it returns).
    stream: bool,
    unsafety: bool,
}

/// The attribute's name for a memory kind.
fn kind_name(k: MemKind) -> &'static str {
    match k {
        MemKind::Host => HOST,
        MemKind::Pinned => PINNED,
        MemKind::Device => DEVICE,
        MemKind::Unified => UNIFIED,
    }
}

impl Docs {
    pub fn new(primal: &str, c: &Checked) -> Self {
        Docs {
            primal: primal.to_string(),
            kinds: match &c.shape {
                Shape::Pointer {
                    dst_kind, src_kind, ..
                } => Some((*dst_kind, *src_kind)),
                Shape::Slice { .. } => None,
            },
            stream: c.stream.is_some(),
            unsafety: c.unsafety,
        }
    }

    fn how_to_call(&self) -> String {
        let (d, s) = if self.kinds.is_some() {
            (
                "`Const(p)`, `Duplicated::new(p, dp)`, `Duplicated::batch(p, [dp1, ..])` or `DuplicatedOnly::new(p, dp)`",
                "the same, with a `*const` primal and `*mut` shadows",
            )
        } else {
            (
                "`Const(&mut x)`, `Duplicated::new(&mut x, &mut dx)`, `Duplicated::batch(&mut x, [&mut dx1, ..])` or `DuplicatedOnly::new(&mut x, &mut dx)`",
                "`Const(&x)`, `Duplicated::new(&x, &mut dx)` or `Duplicated::batch(&x, [..])`",
            )
        };
        format!(
            "\n\n# Arguments\nAs for [`{p}`], except that the destination is an activity: {d}; and the source: {s}. \
             `dst` and `src` must have the same batch width (or one of them be `Const`). \
             Other arguments are passed to [`{p}`] unchanged.",
            p = self.primal
        )
    }

    /// `# Errors` and, for `unsafe` rules, `# Safety`; `reverse` adds the tape check.
    fn tail(&self, reverse: bool) -> String {
        let mut t = self.errors(reverse);
        if self.unsafety {
            t.push_str(&self.safety());
        }
        t
    }

    /// What is checked, and what an `Err` leaves behind.
    fn errors(&self, reverse: bool) -> String {
        let lengths = if self.kinds.is_some() {
            "`LengthMismatch`, `RangeOverflow`"
        } else {
            "`LengthMismatch`"
        };
        let overlaps =
            "overlaps (`PartialOverlap`, for a source and destination that partially overlap)";
        let rest = if reverse {
            format!(", {overlaps} and the tape (`TapeMismatch`)")
        } else {
            format!(" and {overlaps}")
        };
        format!(
            "\n\n# Errors\nEvery argument and every lane is checked before the first write: the driver, \
             contexts and stream (`NoDriver`, `ContextMismatch`, `NoStream`), memory kinds \
             (`UnsupportedKinds`), lengths ({lengths}){rest}. A shadow that aliases a primal, \
             or a shadow of another lane, is a typed error too (`Aliasing`), wherever the runtime \
             can see both addresses. So an `Err` leaves every primal and every shadow unchanged, except `Primal` (when \
             [`{p}`] fails) and `Driver` (when CUDA work fails), which report a failure of the work \
             itself: what ran before it stays written.",
            p = self.primal
        )
    }

    /// The contract of an `unsafe` rule: the primal's, and for pointer rules the shadows' validity,
    /// aliasing and lifetime.
    fn safety(&self) -> String {
        let p = &self.primal;
        let Some((dst, src)) = self.kinds.map(|(d, s)| (kind_name(d), kind_name(s))) else {
            return format!(
                "\n\n# Safety\nThe contract of [`{p}`]: the rule calls it with the primal buffers, and \
                 again with each lane's shadows."
            );
        };
        let lifetime = if self.stream {
            "The call returns before the GPU work it enqueues on the copy's stream has completed. Every \
             pointer must stay valid until that work has completed, and until then nothing may access \
             the memory except work ordered on that stream (work pending on another stream must be \
             ordered before the call)."
                .to_string()
        } else {
            format!(
                "Every pointer must stay valid, and nothing else may access the memory, until the call \
                 and any work [`{p}`] leaves pending have completed."
            )
        };
        format!(
            "\n\n# Safety\nThe contract of [`{p}`], for the primal pointers and again for each lane's \
             shadow pointers. Moreover:\n\n\
             - Every shadow pointer, like its primal, must be valid and aligned for `offset + n` elements \
             (its primal's offset, the copied length) in the memory kind declared for its side \
             (`dst = {dst}`, `src = {src}`); shadows are both read and written.\n\
             - No shadow may alias a primal, nor a shadow of another lane; a lane's `dst` and `src` \
             shadows may be the same range but must not partially overlap (nor may the primals). The \
             runtime refuses what it can see with an `Err`, but that is no licence to pass such \
             pointers.\n\
             - {lifetime}"
        )
    }

    pub fn forward(&self) -> String {
        format!(
            "Forward-mode (tangent) rule of [`{p}`], generated by `#[derivative_rule(copy)]`.\n\n\
             Runs the copy (skipped when `dst` is `DuplicatedOnly`), then for each lane `k`: \
             `d_dst[k] ← d_src[k]` through [`{p}`] itself (same direction, same stream), or \
             `d_dst[k] ← 0` when `src` is `Const`. A `Const` destination's shadows are untouched.{}{}",
            self.how_to_call(),
            self.tail(false),
            p = self.primal
        )
    }

    pub fn augmented(&self, reverse: &Ident) -> String {
        format!(
            "Augmented primal of [`{p}`], generated by `#[derivative_rule(copy)]`: runs the copy \
             (skipped when `dst` is `DuplicatedOnly`) and returns the tape for [`{reverse}`].{}{}",
            self.how_to_call(),
            self.tail(false),
            p = self.primal
        )
    }

    pub fn reverse(&self, augmented: &Ident) -> String {
        format!(
            "Reverse rule of [`{p}`], generated by `#[derivative_rule(copy)]`. Takes the tape from \
             [`{augmented}`] and the same arguments. For each lane `k`, in order on the copy's stream: \
             if `src` is active, `d_src[k] += d_dst[k]`; then `d_dst[k] ← 0` (one fused pass). \
             An exact self-copy is the identity.{}{}",
            self.how_to_call(),
            self.tail(true),
            p = self.primal
        )
    }
}

/// The documentation of the rules generated for a collective.
pub struct CollectiveDocs {
    primal: String,
    kind: Collective,
    unsafety: bool,
}

impl CollectiveDocs {
    pub fn new(primal: &str, kind: Collective, unsafety: bool) -> Self {
        CollectiveDocs {
            primal: primal.to_string(),
            kind,
            unsafety,
        }
    }

    fn attr(&self) -> String {
        format!("`#[derivative_rule({})]`", self.kind.name())
    }

    fn tail(&self) -> String {
        let buffers = match (self.kind.has_dst(), self.kind.has_src()) {
            (true, true) => "the output `#[dst]` and the input `#[src]` are activities",
            (true, false) => "the output `#[dst]` is an activity",
            _ => "the input `#[src]` is an activity",
        };
        let mut t = format!(
            "\n\n# Arguments\nAs for [`{p}`], except that {buffers}: `Const(&x)`, `Duplicated::new(&x, &mut dx)`, \
             `Duplicated::batch(&x, [..])` (`&mut` for the output). Other arguments are passed to [`{p}`] unchanged. \
             **Every rank must call the rule with the same batch width** (`Const` everywhere counts as 0), and \
             not inside an NCCL group: each rank runs one shadow collective per lane.\n\n\
             # Errors\n`NoNccl`/`NoDriver` without NCCL or CUDA, `InvalidRank` for a root or peer outside the \
             communicator, `LengthMismatch` for buffers of the wrong length, `ContextMismatch` for a buffer on \
             another device than the communicator's, `Nccl` when NCCL fails, `Primal` when [`{p}`] fails. \
             Every check runs before anything moves.",
            p = self.primal
        );
        if self.unsafety {
            let _ = write!(t, "\n\n# Safety\nThe contract of [`{}`].", self.primal);
        }
        t
    }

    pub fn forward(&self) -> String {
        format!(
            "Forward-mode (tangent) rule of [`{p}`], generated by {a}.\n\n\
             Runs [`{p}`] (always: every rank must enter the collective), then for each lane `k` the same \
             collective on the tangents, through NCCL on the communicator's stream: `d_y[k] ← J d_x[k]` \
             (a `Const` input contributes zeros).{}",
            self.tail(),
            p = self.primal,
            a = self.attr()
        )
    }

    pub fn augmented(&self, reverse: &Ident) -> String {
        format!(
            "Augmented primal of [`{p}`], generated by {a}: runs [`{p}`] and returns the tape for [`{reverse}`].{}",
            self.tail(),
            p = self.primal,
            a = self.attr()
        )
    }

    pub fn reverse(&self, augmented: &Ident) -> String {
        format!(
            "Reverse rule of [`{p}`], generated by {a}. Takes the tape from [`{augmented}`] and the same \
             arguments. For each lane `k`, on the communicator's stream: the adjoint collective, {adj}, \
             carries `d_y[k]` back, and the result is added into `d_x[k]` where `x` was read; then \
             `d_y[k] ← 0` where `y` was written.{}",
            self.tail(),
            p = self.primal,
            a = self.attr(),
            adj = self.kind.adjoint()
        )
    }
}
