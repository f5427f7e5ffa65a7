//! What a rule check is given ([`Shapes`]) and what it answers ([`Report`], [`CheckError`]).

#![forbid(unsafe_code)]

use crate::element::{Differentiable, Dtype};
use core::fmt;

/// The buffers of a rule check: their lengths, the random seed, and the tolerance.
///
/// ```
/// use rules_runtime::testing::Shapes;
/// let s = Shapes::len(17); // dst and src of 17 elements
/// let s = Shapes::lens(24, 30).seed(7); // a 24-element dst (with pitch padding) and a 30-element src
/// let s = Shapes::lens(0, 90).dst_array((9, 6, 4)); // a 9 × 6 × 4 CUDA array and 90 elements
/// assert_eq!(s.dst, 9 * 6 * 4);
/// ```
///
/// A buffer's extent, `(width, height, depth)` in elements with x fastest, matters only to a
/// CUDA array, whose layout is 1-D, 2-D or 3-D: a side without one is `(len, 1, 1)` (a 1-D
/// array, for an array side).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shapes {
    /// The destination's length, in elements.
    pub dst: usize,
    /// The source's length (ignored by memsets and fills).
    pub src: usize,
    /// The destination's extent as a CUDA array; `None`: `(dst, 1, 1)`. Its product must be
    /// `dst` (else the check is `CheckError::Run` with `Error::LengthMismatch`).
    pub dst_extent: Option<(usize, usize, usize)>,
    /// The source's extent as a CUDA array; `None`: `(src, 1, 1)`.
    pub src_extent: Option<(usize, usize, usize)>,
    /// The seed of every random input.
    pub seed: u64,
    /// The relative tolerance; `None`: the defaults described at [`Shapes::tolerance`].
    pub tolerance: Option<f64>,
}

/// The two sides, as the errors name them.
const SIDES: [&str; 2] = ["the destination", "the source"];

impl Shapes {
    /// A destination and a source of `n` elements each.
    pub fn len(n: usize) -> Shapes {
        Shapes::lens(n, n)
    }

    /// A destination of `dst` elements and a source of `src`.
    pub fn lens(dst: usize, src: usize) -> Shapes {
        Shapes {
            dst,
            src,
            dst_extent: None,
            src_extent: None,
            seed: 0x5eed,
            tolerance: None,
        }
    }

    /// A destination that is a CUDA array of this extent (`(width, height, depth)`), of
    /// `width · height · depth` elements.
    pub fn dst_array(self, extent: (usize, usize, usize)) -> Shapes {
        Shapes {
            dst: volume(extent),
            dst_extent: Some(extent),
            ..self
        }
    }

    /// A source that is a CUDA array of this extent, of `width · height · depth` elements.
    pub fn src_array(self, extent: (usize, usize, usize)) -> Shapes {
        Shapes {
            src: volume(extent),
            src_extent: Some(extent),
            ..self
        }
    }

    /// A typed error for an extent whose elements are not its side's length (made before any
    /// buffer or input is).
    pub(crate) fn validate(&self) -> Result<(), crate::error::Error> {
        // A NaN or negative tolerance would let every comparison pass, or none.
        if let Some(tol) = self.tolerance
            && !(tol.is_finite() && tol >= 0.0)
        {
            return Err(crate::error::Error::BadRegion {
                what: format!("the tolerance {tol} in `Shapes`"),
                why: "a tolerance is a finite number, 0 or more".into(),
            });
        }
        // Lengths whose bytes cannot be allocated (16 bytes is the largest element) are refused
        // here rather than panicking in an allocation.
        // Names and values zipped from two arrays, not an array of (name, value) pairs: under
        // `-Zautodiff=Enable` rustc's type trees abort on the latter (docs/autodiff.md).
        for (side, len) in SIDES.into_iter().zip([self.dst, self.src]) {
            if len > isize::MAX as usize / 16 {
                return Err(crate::error::Error::BadRegion {
                    what: format!("{side}'s length {len} in `Shapes`"),
                    why: "its elements cannot be allocated".into(),
                });
            }
        }
        let sides = SIDES
            .into_iter()
            .zip([self.dst, self.src])
            .zip([self.dst_extent, self.src_extent]);
        for ((side, len), extent) in sides {
            let Some((w, h, d)) = extent else { continue };
            let what = format!("{side}'s extent {w} × {h} × {d} in `Shapes`");
            match w.checked_mul(h).and_then(|v| v.checked_mul(d)) {
                Some(n) if n == len => {}
                Some(n) => {
                    return Err(crate::error::Error::LengthMismatch {
                        what,
                        expected: len,
                        found: n,
                    });
                }
                None => {
                    return Err(crate::error::Error::BadRegion {
                        what,
                        why: "its elements do not fit in a usize".into(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The destination's extent: the array's, or `(dst, 1, 1)`.
    pub(crate) fn dst_ext(&self) -> (usize, usize, usize) {
        self.dst_extent.unwrap_or((self.dst, 1, 1))
    }

    /// The source's extent: the array's, or `(src, 1, 1)`.
    pub(crate) fn src_ext(&self) -> (usize, usize, usize) {
        self.src_extent.unwrap_or((self.src, 1, 1))
    }

    /// Another seed for the random inputs.
    pub fn seed(self, seed: u64) -> Shapes {
        Shapes { seed, ..self }
    }

    /// The relative tolerance of every comparison: `|a − b| ≤ tol · max(1, |a|, |b|)` per real
    /// part, and for the dot product on its two sides.
    ///
    /// The defaults: element comparisons are exact. The inputs are multiples of 1/64 in [-1, 1]
    /// (exact in every element type), the finite differences use the step h = 1, and a copy,
    /// memset or fill is affine, so `(f(x + v) − f(x − v)) / 2` is its derivative exactly. The
    /// dot product is exact for `f64`; for the other types a fill's reverse rounds its sum to
    /// the element type, so it allows 2⁻²² (`f32`), 2⁻⁹ (`f16`), 2⁻⁶ (`bf16`). Give a tolerance
    /// for a primitive that is not exactly affine (one that converts or scales in another
    /// precision).
    pub fn tolerance(self, tol: f64) -> Shapes {
        Shapes {
            tolerance: Some(tol),
            ..self
        }
    }

    /// The tolerance of element comparisons.
    pub(crate) fn element_tol(&self) -> f64 {
        self.tolerance.unwrap_or(0.0)
    }

    /// The tolerance of the dot product for `T`.
    pub(crate) fn dot_tol<T: Differentiable>(&self) -> f64 {
        self.tolerance.unwrap_or(match T::DTYPE {
            Dtype::F64 | Dtype::C64 => 0.0,
            Dtype::F32 | Dtype::C32 => 2f64.powi(-22),
            Dtype::F16 => 2f64.powi(-9),
            Dtype::Bf16 => 2f64.powi(-6),
        })
    }
}

/// The elements of an extent; one too many to count is `usize::MAX`, which no buffer of the
/// check has, so that making it is a typed error.
fn volume((w, h, d): (usize, usize, usize)) -> usize {
    w.checked_mul(h)
        .and_then(|v| v.checked_mul(d))
        .unwrap_or(usize::MAX)
}

/// The checks a rule check runs; each [`Failure`] names one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    /// The primal result of the rule's `forward` and `augmented_primal` is what the primitive
    /// computes (a `DuplicatedOnly` destination may keep its old contents instead), and an
    /// augmented primal leaves every shadow as it was.
    Primal,
    /// The elements the primitive writes are the elements the rule's forward writes (its
    /// `d_dst ← 0` for a `Const` source): a rule that zeroes more or less than its primitive
    /// writes loses or keeps gradient that it should not.
    Footprint,
    /// The forward rule's tangent equals the central finite differences of the primitive,
    /// element by element.
    FiniteDifferences,
    /// ⟨J v, w⟩ (the forward rule) equals ⟨v, Jᵀ w⟩ (the reverse rule): the reverse is the
    /// transpose of the forward.
    DotProduct,
    /// With `Const` or `DuplicatedOnly` on a side, the rules do what `Duplicated` implies: a
    /// `Const` source zeroes the destination's tangent where it writes, a `Const` destination
    /// touches no shadow, a forward never writes a source's shadow.
    Activity,
    /// A batch of width 2 or 3 gives, lane by lane, what width 1 gives.
    Batch,
}

impl Check {
    /// The check's name, as messages print it.
    pub fn name(self) -> &'static str {
        match self {
            Check::Primal => "primal",
            Check::Footprint => "footprint",
            Check::FiniteDifferences => "forward vs finite differences",
            Check::DotProduct => "dot product (reverse vs forward)",
            Check::Activity => "activity",
            Check::Batch => "batch",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One element that differs: its index in the buffer, what was expected and what was found
/// (the real parts; for [`Check::Footprint`], 1 where written and 0 where not).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Diff {
    /// The element's index.
    pub index: usize,
    /// The expected value.
    pub expected: [f64; 2],
    /// The value found.
    pub found: [f64; 2],
}

/// One failed comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The check.
    pub check: Check,
    /// The rule call and its activities, e.g. `forward(dst Duplicated, src Const), width 3`.
    pub call: String,
    /// The lane, for a shadow.
    pub lane: Option<usize>,
    /// The buffer compared: `dst`, `d_dst`, `d_src` or `d_value`.
    pub buffer: &'static str,
    /// The first differing elements (at most 4).
    pub diffs: Vec<Diff>,
    /// How many elements differ.
    pub count: usize,
    /// What was compared, in words.
    pub detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.check, self.call)?;
        if let Some(k) = self.lane {
            write!(f, ", lane {k}")?;
        }
        write!(f, ": {} ({})", self.detail, self.buffer)?;
        if self.count > 0 {
            write!(f, "; {} element(s) differ:", self.count)?;
            for d in &self.diffs {
                let part = |p: [f64; 2]| {
                    if p[1] == 0.0 {
                        format!("{}", p[0])
                    } else {
                        format!("{}{:+}i", p[0], p[1])
                    }
                };
                write!(
                    f,
                    " [{}] expected {}, found {};",
                    d.index,
                    part(d.expected),
                    part(d.found)
                )?;
            }
        }
        Ok(())
    }
}

/// What a rule check found when every comparison held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The rule calls made (primitive runs included).
    pub calls: usize,
    /// The comparisons made.
    pub comparisons: usize,
    /// The checks run.
    pub checks: Vec<Check>,
    /// The destination elements the primitive writes (and the rule's forward with them).
    pub footprint: Vec<usize>,
}

/// Why a rule check did not pass.
#[derive(Debug)]
pub enum CheckError {
    /// A call returned an error (the primitive, a rule, or making a buffer): `during` says which.
    Run {
        /// The call, in words.
        during: String,
        /// Its error.
        error: crate::error::Error,
    },
    /// Comparisons failed: every one, in the order they ran.
    Failed(Vec<Failure>),
}

impl CheckError {
    /// The failures (none for [`CheckError::Run`]).
    pub fn failures(&self) -> &[Failure] {
        match self {
            CheckError::Failed(f) => f,
            CheckError::Run { .. } => &[],
        }
    }

    /// Whether a failure of `check` is among them.
    pub fn failed(&self, check: Check) -> bool {
        self.failures().iter().any(|f| f.check == check)
    }
}

/// How many failures a [`CheckError`]'s message lists (all are in [`CheckError::failures`]).
const SHOWN: usize = 6;

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Run { during, error } => write!(f, "rule check: {during} failed: {error}"),
            CheckError::Failed(fs) => {
                write!(f, "rule check failed ({} comparison(s)):", fs.len())?;
                // The first failures say what is wrong; the rest are mostly the same fault
                // seen through other activities and widths.
                for x in fs.iter().take(SHOWN) {
                    write!(f, "\n  {x}")?;
                }
                if fs.len() > SHOWN {
                    write!(f, "\n  ... and {} more", fs.len() - SHOWN)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckError::Run { error, .. } => Some(error),
            CheckError::Failed(_) => None,
        }
    }
}
