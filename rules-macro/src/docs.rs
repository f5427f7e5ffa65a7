//! The documentation of the generated rules, from the plan: what each one does, how to call it,
//! its errors and, for `unsafe` rules, its safety contract. Short on purpose: every rule carries
//! it three times, and rustc stores it in the crate's metadata; the semantics are documented once
//! in the runtime crate.

use crate::model::Kind;
use crate::plan::Plan;
use syn::Ident;

/// The documentation of one rule's generated functions.
pub struct Docs<'a> {
    /// The primal as the docs link it (`name`, or `Self::name`).
    primal: String,
    plan: &'a Plan,
}

/// What the reverse rule checks that the others do not.
const TAPE_CHECK: &str = "the tape (`TapeMismatch`), ";

impl<'a> Docs<'a> {
    /// The docs of the rules generated for `primal` by `plan`.
    pub fn new(primal: String, plan: &'a Plan) -> Self {
        Docs { primal, plan }
    }

    /// `#[derivative_rule(kind)]`, as the docs name the attribute.
    fn attr(&self) -> String {
        format!("`#[derivative_rule({})]`", self.plan.kind.name())
    }

    /// The forward rule's docs.
    pub fn forward(&self) -> String {
        let p = &self.primal;
        let what = if let Some(w) = self.region_forward() {
            w
        } else if self.plan.kind == Kind::Copy {
            format!(
                "Runs the copy (not when `dst` is `DuplicatedOnly`), then for each lane `k`: \
                 `d_dst[k] ← d_src[k]` through [`{p}`] itself, or `d_dst[k] ← 0` when `src` is `Const`."
            )
        } else {
            format!(
                "Runs [`{p}`] (always: every rank must enter the collective), then for each lane \
                 `k` the same collective on the tangents, on the communicator's stream."
            )
        };
        self.page("Forward-mode (tangent) rule", &what, false)
    }

    /// The augmented primal's docs.
    pub fn augmented(&self, reverse: &Ident) -> String {
        let what = format!(
            "Runs [`{}`] and returns the tape for [`{reverse}`].",
            self.primal
        );
        self.page("Augmented primal", &what, false)
    }

    /// The reverse rule's docs.
    pub fn reverse(&self, augmented: &Ident) -> String {
        let what = if let Some(w) = self.region_reverse(augmented) {
            w
        } else if self.plan.kind == Kind::Copy {
            format!(
                "Takes the tape from [`{augmented}`] and the same arguments. For each lane `k`, \
                 in order: `d_src[k] += d_dst[k]` if `src` is active, then `d_dst[k] ← 0`."
            )
        } else {
            format!(
                "Takes the tape from [`{augmented}`] and the same arguments. For each lane `k`: \
                 the adjoint collective, {}, carries `d_y[k]` back into `d_x[k]`; then \
                 `d_y[k] ← 0`.",
                self.plan.kind.adjoint()
            )
        };
        self.page("Reverse rule", &what, true)
    }

    /// The forward rule of a region kind, in words (`None` for copies and collectives).
    fn region_forward(&self) -> Option<String> {
        let p = &self.primal;
        let lanes = match self.plan.kind {
            Kind::Memset => "`d_dst[k][R] ← 0`".to_string(),
            Kind::Fill if self.plan.value.is_some() => {
                "`d_dst[k][R] ← d_v[k]` (the value `Const(v)` or `Dual`; 0 when `Const`)"
                    .to_string()
            }
            Kind::Fill => format!(
                "`d_dst[k][R] ← d_v[k]` through [`{p}`] itself, or 0 when the value is `Const`"
            ),
            Kind::Copy2d | Kind::Copy3d => format!(
                "`d_dst[k][R] ← d_src[k][R']` through [`{p}`] itself, or `d_dst[k][R] ← 0` when `src` is `Const`"
            ),
            _ => return None,
        };
        Some(format!(
            "Runs [`{p}`] (not when `dst` is `DuplicatedOnly`), then for each lane `k`: {lanes}. \
             `R` is the destination's box; nothing outside it (padding between rows included) is \
             read or written."
        ))
    }

    /// The reverse rule of a region kind (or of a rule with `restore`), in words.
    fn region_reverse(&self, augmented: &Ident) -> Option<String> {
        let lanes = match self.plan.kind {
            Kind::Memset => "`d_dst[k][R] ← 0`",
            Kind::Fill if self.plan.value.is_some() => {
                "with an `Active` value, `d_v[k] = Σ_R d_dst[k]` (a deterministic sum), returned as \
                 one derivative per lane (`[T; N]`; `()` for a `Const` value); then `d_dst[k][R] ← 0`"
            }
            Kind::Fill => "`d_v[k] += Σ_R d_dst[k]` on the stream, then `d_dst[k][R] ← 0`",
            Kind::Copy2d | Kind::Copy3d => {
                "`d_src[k][R'] += d_dst[k][R]` if `src` is active, then `d_dst[k][R] ← 0` (one fused pass)"
            }
            _ if self.plan.restore => {
                "`d_src[k] += d_dst[k]` if `src` is active, then `d_dst[k] ← 0`"
            }
            _ => return None,
        };
        let restore = if self.plan.restore {
            " Then the destination's old contents, saved by the augmented primal, are written back."
        } else {
            ""
        };
        Some(format!(
            "Takes the tape from [`{augmented}`] and the same arguments. For each lane `k`, in \
             order: {lanes}.{restore}"
        ))
    }

    fn page(&self, title: &str, what: &str, reverse: bool) -> String {
        let mut page = format!(
            "{title} of [`{p}`], generated by {a}. {what}\n\n# Arguments\n{args}\n\n# Errors\n{errors}",
            p = self.primal,
            a = self.attr(),
            args = self.arguments(),
            errors = self.errors(reverse),
        );
        if self.plan.unsafety {
            page.push_str("\n\n# Safety\n");
            page.push_str(&self.safety());
        }
        page
    }

    fn arguments(&self) -> String {
        let p = &self.primal;
        if self.plan.kind.is_collective() {
            return format!(
                "As for [`{p}`], with the buffers as activities (`Const`, `Duplicated`). Every rank \
                 must call the rule with the same batch width, and not inside an NCCL group."
            );
        }
        if self.plan.value.is_some() {
            return format!(
                "As for [`{p}`], with `dst` as an activity (`Const`, `Duplicated`, \
                 `DuplicatedOnly`) and the value as `Const(v)` or `Dual` (forward) or `Const(v)` or \
                 `Active(v)` (augmented primal and reverse)."
            );
        }
        if self.plan.src.is_none() {
            return format!(
                "As for [`{p}`], with `dst` as an activity (`Const`, `Duplicated`, `DuplicatedOnly`)."
            );
        }
        format!(
            "As for [`{p}`], with `dst` and `src` as activities (`Const`, `Duplicated`, \
             `DuplicatedOnly`) of the same batch width (or one of them `Const`)."
        )
    }

    fn errors(&self, reverse: bool) -> String {
        let p = &self.primal;
        let tape = if reverse { TAPE_CHECK } else { "" };
        if self.plan.kind.is_collective() {
            return format!(
                "`NoNccl`, `NoDriver`, `InvalidRank`, `LengthMismatch`, `ContextMismatch`, \
                 {tape}checked before anything moves; `Nccl` when NCCL fails, `Primal` when \
                 [`{p}`] fails."
            );
        }
        let ranges = match (self.plan.extent().is_some(), self.plan.is_region()) {
            (true, true) => "`RangeOverflow`, `BadRegion`, ",
            (true, false) => "`RangeOverflow`, ",
            (false, true) => "`BadRegion`, ",
            (false, false) => "",
        };
        format!(
            "Every argument and every lane is checked before the first write (`NoDriver`, \
             `ContextMismatch`, `NoStream`, `UnsupportedKinds`, `LengthMismatch`, {ranges}\
             `PartialOverlap`, `Aliasing`, {tape}…), so such an `Err` changes nothing. `Primal` \
             (from [`{p}`]) and `Driver` report a failure of the work itself: what ran before it \
             stays written."
        )
    }

    /// The contract of an `unsafe` rule: the primal's, and for pointer rules the shadows'
    /// validity, aliasing and lifetime.
    fn safety(&self) -> String {
        let p = &self.primal;
        let Some(e) = self.plan.extent() else {
            return format!(
                "The contract of [`{p}`]: the rule calls it with the primal buffers, and again \
                 with each lane's shadows."
            );
        };
        let lifetime = if self.plan.has_stream() {
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
            "The contract of [`{p}`], for the primal pointers and again for each lane's shadow \
             pointers. Moreover:\n\n\
             - Every shadow pointer, like its primal, must be valid and aligned for its box (`offset + n` elements, or the rows of a region rule) \
             in the memory kind declared for its side (`dst = {dst}`, `src = {src}`); shadows are both \
             read and written.\n\
             - No shadow may alias a primal, nor a shadow of another lane; a lane's `dst` and `src` \
             shadows may be the same range but must not partially overlap (nor may the primals).\n\
             - {lifetime}",
            dst = e.dst_kind.name(),
            src = e.src_kind.name(),
        )
    }
}
