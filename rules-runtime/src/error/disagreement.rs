//! What the checked mode reports when a primitive did not write what its rule assumes.

use std::fmt;

/// What the checked mode found after a primitive's call ([`Error::PrimalDisagrees`]).
///
/// [`Error::PrimalDisagrees`]: super::Error::PrimalDisagrees
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrimalDisagreement {
    /// The primitive's name (empty for a rule the attribute did not generate).
    pub rule: &'static str,
    /// The destination parameter's name.
    pub param: &'static str,
    /// `None`: the call on the primals; `Some(k)`: the forward's call on lane `k`'s shadows.
    pub lane: Option<usize>,
    /// What the rule assumes the primitive wrote.
    pub assumed: Assumed,
    /// How many elements of the box disagree.
    pub count: u64,
    /// How many elements the box has.
    pub total: u64,
    /// The first few that disagree, as `(x, y, z)` in the box (column, row, slice).
    pub first: Vec<(usize, usize, usize)>,
    /// The box's shape: width, height, depth.
    pub shape: (usize, usize, usize),
}

/// What a rule assumes its primitive wrote in the destination's box.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Assumed {
    /// A copy: every element bitwise equal to the source box's (`src` names the parameter).
    Copy {
        /// The source parameter's name.
        src: &'static str,
    },
    /// A memset: one bit pattern, every element bitwise equal to the box's first.
    Memset,
    /// A fill: every element bitwise equal to the value.
    Fill {
        /// The value parameter's name.
        value: &'static str,
        /// The value, as `Debug` shows it.
        shown: String,
    },
}

impl fmt::Display for PrimalDisagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let param = self.param;
        match self.rule {
            "" => f.write_str("a rule's primitive")?,
            rule => write!(f, "`{rule}`")?,
        }
        f.write_str(" did not do what its rule assumes: after ")?;
        match self.lane {
            None => f.write_str("its call on the primals")?,
            Some(k) => write!(f, "its call on lane {k}'s shadows")?,
        }
        write!(
            f,
            ", {} of the {} elements of `{param}`'s box ",
            self.count, self.total
        )?;
        match &self.assumed {
            Assumed::Copy { src } => write!(
                f,
                "differ from `{src}`'s (a copy rule assumes `{param} == {src}` in the box, bitwise)"
            )?,
            Assumed::Memset => f.write_str(
                "differ from its first element (a memset rule assumes one repeated bit pattern)",
            )?,
            Assumed::Fill { value, shown } => write!(
                f,
                "differ from the value `{value}` = {shown} (a fill rule assumes `{param}[..] == {value}`)"
            )?,
        }
        let (_, h, d) = self.shape;
        f.write_str("; the first: ")?;
        for (i, &(x, y, z)) in self.first.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if h * d <= 1 {
                write!(f, "element {x}")?;
            } else if d <= 1 {
                write!(f, "(row {y}, column {x})")?;
            } else {
                write!(f, "(slice {z}, row {y}, column {x})")?;
            }
        }
        if self.count > self.first.len() as u64 {
            f.write_str(", ...")?;
        }
        f.write_str(". ")?;
        let part = "if the primitive writes only part of the buffer, give the rule that part: \
                    slice the buffer at the call, or take the pointer form with `#[dst_offset]` and \
                    `#[len]`, or a box (`#[width]`, `#[height]`, ...)";
        match &self.assumed {
            Assumed::Copy { .. } => write!(
                f,
                "The primitive left these elements alone or wrote other values there: {part}; \
                 if it computes values rather than copying them (scales, permutes, converts), it \
                 is not a copy, and a copy rule's derivative is wrong for it"
            )?,
            Assumed::Memset => write!(
                f,
                "The primitive left these elements alone or wrote another pattern there: {part}; \
                 if it writes values rather than one bit pattern, it is not a memset"
            )?,
            Assumed::Fill { .. } => write!(
                f,
                "The primitive left these elements alone or wrote other values there: {part}; \
                 if it writes something computed from the value (`2 * v`), it is not a fill, and \
                 a fill rule's derivative is wrong for it"
            )?,
        }
        f.write_str(". Nothing else was written (no shadow work, no tape).")
    }
}
