//! The checked mode (the `checked` feature, docs/checked.md): right after each call of a rule's
//! primitive, before any shadow work, the destination's box is compared with what the rule
//! assumes the primitive wrote: the source's box (a copy), one repeated bit pattern (a memset),
//! the value (a fill). A disagreement is [`Error::PrimalDisagrees`], naming the rule's parameters
//! ([`RuleNames`], which the attribute generates). Without the feature every function here
//! returns at once and nothing is compared.

use crate::element::Differentiable;
use crate::error::{Assumed, Error, PrimalDisagreement, Result};
use crate::memory::ShadowRead;
use crate::ops::check::{CAPTURE, Expect, Found, compare};
use crate::ops::{On, refuse_call_in_capture};
use crate::region::Pitched;
use cudarc::driver::CudaStream;

/// Whether the checked mode is built in.
pub(crate) const ENABLED: bool = cfg!(feature = "checked");

/// The names a rule's errors use: its primitive's and its parameters'. The attribute generates
/// them (`__NAMES` of every rule trait, read through `__names`); the runtime does not know
/// parameter names otherwise.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleNames {
    /// The primitive's name.
    pub rule: &'static str,
    /// The destination parameter's name.
    pub dst: &'static str,
    /// The source's, or a fill's value's (empty for a memset).
    pub src: &'static str,
}

impl RuleNames {
    /// The names of a rule the attribute did not generate.
    pub const UNNAMED: RuleNames = RuleNames {
        rule: "",
        dst: "dst",
        src: "src",
    };

    /// The names from the packed form the attribute writes as the rule traits' `__NAMES`:
    /// `"rule\0dst\0src"`. One string literal a rule costs rustc about half what this struct of
    /// three does (docs/build-cost.md). The traits unpack it in a `const` block, at compile time.
    /// `""` (a rule the attribute did not generate), and anything else not of three parts, is
    /// [`Self::UNNAMED`].
    #[doc(hidden)]
    pub const fn unpack(packed: &'static str) -> RuleNames {
        let b = packed.as_bytes();
        let (mut i, mut nuls, mut first, mut second) = (0, 0, 0, 0);
        while i < b.len() {
            if b[i] == 0 {
                if nuls == 0 {
                    first = i;
                } else {
                    second = i;
                }
                nuls += 1;
            }
            i += 1;
        }
        if nuls != 2 {
            return Self::UNNAMED;
        }
        let (rule, rest) = b.split_at(first);
        let (dst, rest) = rest.split_at(second - first);
        let (_, dst) = dst.split_at(1);
        let (_, src) = rest.split_at(1);
        match (
            core::str::from_utf8(rule),
            core::str::from_utf8(dst),
            core::str::from_utf8(src),
        ) {
            (Ok(rule), Ok(dst), Ok(src)) => RuleNames { rule, dst, src },
            _ => Self::UNNAMED,
        }
    }
}

/// Which call of the primitive a check follows.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Which {
    /// The call on the primals.
    Primal,
    /// The forward's call on lane `k`'s shadows ("through the primitive").
    Lane(usize),
}

/// In the checked mode, refuses a call whose stream is capturing, before the primitive runs: the
/// compare waits for the stream. `home`: the stream the work is ordered on without one named.
pub(crate) fn refuse_capture(on: On<'_>, home: Option<&CudaStream>) -> Result<()> {
    refuse_call_in_capture(on, home, CAPTURE, ENABLED)
}

/// After a copy of whole buffers: `dst == src`.
pub(crate) fn copied_whole<X, Y>(
    on: On<'_>,
    names: RuleNames,
    which: Which,
    dst: &X,
    src: &Y,
) -> Result<()>
where
    X: ShadowRead + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
{
    if !ENABLED {
        return Ok(());
    }
    let whole = |n| Pitched::linear::<X::Elem>(0, n);
    copied(
        on,
        names,
        which,
        (dst, whole(dst.len())),
        (src, whole(src.len())),
    )
}

/// After a copy of boxes: `dst[rd] == src[rs]`.
pub(crate) fn copied<X, Y>(
    on: On<'_>,
    names: RuleNames,
    which: Which,
    (dst, rd): (&X, Pitched),
    (src, rs): (&Y, Pitched),
) -> Result<()>
where
    X: ShadowRead + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
{
    if !ENABLED {
        return Ok(());
    }
    let found = compare(on, dst, rd, Expect::Copy(src, rs))?;
    judge(names, which, Assumed::Copy { src: names.src }, found, rd)
}

/// After a memset: one bit pattern in `dst[r]`.
pub(crate) fn repeated<X: ShadowRead + ?Sized>(
    on: On<'_>,
    names: RuleNames,
    which: Which,
    dst: &X,
    r: Pitched,
) -> Result<()> {
    if !ENABLED {
        return Ok(());
    }
    let found = compare::<X, X>(on, dst, r, Expect::Repeat)?;
    judge(names, which, Assumed::Memset, found, r)
}

/// After a fill by value: `dst[r] == v`.
pub(crate) fn filled<X: ShadowRead + ?Sized>(
    on: On<'_>,
    names: RuleNames,
    which: Which,
    dst: &X,
    r: Pitched,
    v: X::Elem,
) -> Result<()> {
    if !ENABLED {
        return Ok(());
    }
    let found = compare::<X, X>(on, dst, r, Expect::Value(v))?;
    judge(names, which, fill(names, v), found, r)
}

/// After a fill from a one-element buffer: `dst[r] == src[rs]`'s one element.
pub(crate) fn filled_from<X, Y>(
    on: On<'_>,
    names: RuleNames,
    which: Which,
    (dst, r): (&X, Pitched),
    (src, rs): (&Y, Pitched),
) -> Result<()>
where
    X: ShadowRead + ?Sized,
    Y: ShadowRead<Elem = X::Elem> + ?Sized,
{
    if !ENABLED {
        return Ok(());
    }
    let found = compare(on, dst, r, Expect::ValueIn(src, rs))?;
    let Some(found) = found else { return Ok(()) };
    // Read again only to show it: this is the error's path.
    let v = crate::ops::check::value_of(on, src, rs)?;
    judge(names, which, fill(names, v), Some(found), r)
}

fn fill<T: Differentiable>(names: RuleNames, v: T) -> Assumed {
    Assumed::Fill {
        value: names.src,
        shown: format!("{v:?}"),
    }
}

/// The error for what the compare found, if anything.
fn judge(
    names: RuleNames,
    which: Which,
    assumed: Assumed,
    found: Option<Found>,
    r: Pitched,
) -> Result<()> {
    let Some(found) = found else { return Ok(()) };
    let (w, h, d) = r.shape();
    let at = |i: u64| {
        let i = i as usize;
        let (x, row) = (i % w.max(1), i / w.max(1));
        (x, row % h.max(1), row / h.max(1))
    };
    Err(Error::PrimalDisagrees(Box::new(PrimalDisagreement {
        rule: names.rule,
        param: names.dst,
        lane: match which {
            Which::Primal => None,
            Which::Lane(k) => Some(k),
        },
        assumed,
        count: found.count,
        total: (w * h * d) as u64,
        first: found.first.iter().map(|&i| at(i)).collect(),
        shape: (w, h, d),
    })))
}
