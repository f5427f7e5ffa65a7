//! The tape of a region rule: what its augmented primal hands to its reverse, and the reverse's
//! check that it was given the tape of the same call.

use super::Checked;
use crate::error::{Error, Result};
use crate::ops::SavedRegion;
use crate::region::Pitched;

/// What the augmented primal of a region rule (or of any rule with `restore`) hands to its
/// reverse: the boxes, a fingerprint of the primals, and with `restore` the destination's old
/// contents, held in pooled memory until the tape is used or dropped.
///
/// Move-only, and consumed by the reverse. It names the kind of rule that made it (and whether
/// that rule restores), so that another kind of rule's reverse on the same buffers refuses it.
#[derive(Debug)]
pub struct RegionTape<T> {
    dst: Pitched,
    src: Pitched,
    width: usize,
    primal_ran: bool,
    call: u64,
    rule: Rule,
    saved: Option<SavedRegion<T>>,
}

/// The kind of region rule a tape was made by, and whether it restores.
pub(crate) type Rule = (Kind, bool);

/// The kinds of region rules, whose reverses differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Two buffers: a pitched copy, a copy with `restore` or with an array side, a fill from a
    /// one-element buffer.
    Pair,
    /// A memset.
    Memset,
    /// A fill by value.
    Fill,
}

impl<T> RegionTape<T> {
    pub(crate) fn new(c: &Checked, width: usize, primal_ran: bool, rule: Rule) -> Self {
        RegionTape {
            dst: c.dst,
            src: c.src,
            width,
            primal_ran,
            call: c.call,
            rule,
            saved: None,
        }
    }

    pub(crate) fn with_saved(mut self, saved: Option<SavedRegion<T>>) -> Self {
        self.saved = saved;
        self
    }

    /// The destination's box.
    pub fn dst_box(&self) -> Pitched {
        self.dst
    }
    /// The source's box (for a fill from a one-element buffer: that element; for a memset or a
    /// fill by value: the destination's box).
    pub fn src_box(&self) -> Pitched {
        self.src
    }
    /// Number of destination shadows (0 for a `Const` destination).
    pub fn width(&self) -> usize {
        self.width
    }
    /// Whether the primal ran (false when `dst` was `DuplicatedOnly`, or for a self-copy).
    pub fn primal_ran(&self) -> bool {
        self.primal_ran
    }
    /// Whether the reverse will write the destination's old contents back (`restore`).
    pub fn restores(&self) -> bool {
        self.saved.is_some()
    }

    /// Checks the tape against the reverse's own call and rule; hands back what was saved.
    pub(crate) fn check(
        self,
        c: &Checked,
        width: usize,
        rule: Rule,
    ) -> Result<Option<SavedRegion<T>>> {
        if self.rule != rule {
            let says = |(kind, restore): Rule| {
                format!("{kind:?}{}", if restore { " with `restore`" } else { "" })
            };
            return Err(Error::TapeMismatch(format!(
                "the tape was made by a {} rule, but this reverse is of a {} rule",
                says(self.rule),
                says(rule)
            )));
        }
        let found = (c.dst, c.src, width);
        let made = (self.dst, self.src, self.width);
        if made != found {
            return Err(Error::TapeMismatch(format!(
                "the tape was made for (dst box, src box, width) = {made:?}, \
                 but the reverse was called with {found:?}"
            )));
        }
        if self.call != c.call {
            return Err(Error::TapeMismatch(
                "the tape was made by a call on other primal buffers: \
                 give each reverse the tape of its own augmented primal"
                    .into(),
            ));
        }
        Ok(self.saved)
    }
}
