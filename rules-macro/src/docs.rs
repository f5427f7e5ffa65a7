//! The documentation of the generated rule item, from the plan: how to call the three rules and,
//! for an `unsafe` primal on references, the constructor's safety contract. Short on purpose:
//! rustc stores it in the crate's metadata (and a proc macro built without optimisation spends
//! real time on a long literal); the semantics, errors and pointer contracts are documented once,
//! on the runtime's rule traits.

use crate::model::Kind;
use crate::plan::Plan;
use syn::Ident;

/// The documentation of one rule's generated item.
pub struct Docs<'a> {
    /// The primal as the docs link it (`name`, or `Self::name`).
    primal: String,
    plan: &'a Plan,
}

impl<'a> Docs<'a> {
    /// The docs of the rules generated for `primal` by `plan`.
    pub fn new(primal: String, plan: &'a Plan) -> Self {
        Docs { primal, plan }
    }

    /// The docs of the rule item `name` (holding `args`), which implements `trait_name`.
    pub fn rule(&self, name: &Ident, args: &[String], trait_name: &str) -> String {
        let p = &self.primal;
        let acts = self.activities();
        let buffers = acts.replace(", ", "`, `");
        let (call, holds) = match p.strip_prefix("Self::") {
            Some(_) => (format!("Self::{name}({})", args.join(", ")), "returns"),
            None => (format!("{name}({})", args.join(", ")), "holds"),
        };
        let unsafety = match self.plan.extent() {
            Some(e) => format!(
                " (`unsafe`: the pointers' contract, `dst = {}`, `src = {}`, and the primal's)",
                e.dst_kind.name(),
                e.src_kind.name()
            ),
            None => String::new(),
        };
        format!(
            "Derivative rules of [`{p}`] (`#[derivative_rule({kind})]`). `{call}` {holds} its \
             other arguments; the methods of `{trait_name}`{unsafety} take `{buffers}` as \
             activities: `forward({acts})`, the tangent rule; `augmented_primal({acts})`, which \
             runs [`{p}`] and returns the tape; `reverse(tape, {acts})`: {reverse}.",
            kind = self.plan.kind.name(),
            reverse = self.reverse(),
        )
    }

    /// The docs of the constructor of a rule struct with named fields.
    pub fn constructor(&self, name: &Ident) -> String {
        let p = &self.primal;
        let mut doc = format!("The rule object of [`{p}`]: see the struct `{name}`.");
        if self.plan.unsafety && self.plan.extent().is_none() {
            doc.push_str(&format!(
                "\n\n# Safety\nEvery call of the rule's methods must meet the contract of \
                 [`{p}`]: they call it with the primal buffers, and again with each lane's \
                 shadows."
            ));
        }
        doc
    }

    /// The activities the rules take, as their methods name them.
    fn activities(&self) -> &'static str {
        let p = self.plan;
        match (p.dst.is_some(), p.src.is_some(), p.value.is_some()) {
            (true, true, _) => "dst, src",
            (true, false, true) => "dst, value",
            (true, false, false) => "dst",
            (false, _, _) => "src",
        }
    }

    /// What the reverse rule does, per lane, in a phrase.
    fn reverse(&self) -> String {
        let what = match self.plan.kind {
            Kind::Memset => "`d_dst[R] ← 0`",
            Kind::Fill if self.plan.value.is_some() => {
                "returns `d_v = Σ_R d_dst` for an `Active` value, then `d_dst[R] ← 0`"
            }
            Kind::Fill => "`d_v += Σ_R d_dst`, then `d_dst[R] ← 0`",
            Kind::Copy2d | Kind::Copy3d => "`d_src[R'] += d_dst[R]`, then `d_dst[R] ← 0`",
            Kind::Copy => "`d_src += d_dst`, then `d_dst ← 0`",
            kind => {
                return format!(
                    "the adjoint collective ({}) carries `d_y` into `d_x`, then `d_y ← 0`",
                    kind.adjoint()
                );
            }
        };
        let restore = if self.plan.restore {
            ", then the old destination written back"
        } else {
            ""
        };
        format!("{what}, per lane{restore}")
    }
}
