//! The bodies of generated copy rules, written once here and called by the code that
//! `#[derivative_rule(copy)]` generates. Each body checks everything first (lengths, aliasing of
//! every buffer against every other, the tape, and the route of every lane's shadow work), so bad
//! input changes nothing; then it runs the primal and the shadow work.
//!
//! Two shapes: *slice* rules, whose `dst`/`src` are references to buffers (`&mut X` ← `&Y`), and
//! *pointer* rules, whose `dst`/`src` are raw pointers with offsets and a length.
//!
//! - here: what both shapes share: the primal's outcome, the tape ([`CopyTape`]), the overlap
//!   check and fingerprint of a call (`Call`), and the planning of every lane's shadow work;
//! - [`slice`](mod@slice): the bodies of slice rules ([`copy_forward`], ...);
//! - [`ptr`]: the bodies of pointer rules ([`ptr_copy_forward`], ...) and their shape
//!   ([`PtrCopy`]).

mod ptr;
mod slice;

pub use ptr::PtrCopy;
pub(crate) use ptr::{ptr_copy_augmented_primal, ptr_copy_forward, ptr_copy_reverse};
pub use slice::{copy_augmented_primal, copy_forward, copy_reverse};

use crate::error::{Error, PrimalError, Result};
use crate::memory::{Overlap, Region, ShadowMemory};
use crate::ops::{self, On, Op, Plan};

/// What a copy primitive may return: `()` or `Result<(), E>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a return type a derivative rule can pass on",
    label = "a copy primitive returns `()` or `Result<(), E>`",
    note = "in `Result<(), E>`, `E` must convert into `Box<dyn std::error::Error + Send + Sync>`: implement `std::error::Error` for it (it must also be `Send + Sync + 'static`)"
)]
pub trait PrimalOutcome {
    /// The primal's outcome as the runtime's result.
    fn into_result(self) -> Result<()>;
}
impl PrimalOutcome for () {
    fn into_result(self) -> Result<()> {
        Ok(())
    }
}
impl<E: Into<PrimalError>> PrimalOutcome for core::result::Result<(), E> {
    fn into_result(self) -> Result<()> {
        self.map_err(Error::primal)
    }
}

/// What the augmented primal of a copy hands to its reverse: the shape of the copy and a
/// fingerprint of the buffers it was made for, so that the reverse can check it is given the same
/// call's arguments.
///
/// Move-only, and consumed by the reverse: one augmented primal, one reverse. The fingerprint is
/// of the primals' addresses and lengths: the reverse of another call on other buffers is
/// [`Error::TapeMismatch`], but a new buffer that the allocator put at an old buffer's address,
/// with its length, cannot be told from it (see docs/soundness.md).
#[derive(Debug, PartialEq, Eq)]
pub struct CopyTape {
    n: usize,
    dst_offset: usize,
    src_offset: usize,
    width: usize,
    primal_ran: bool,
    /// The addresses and lengths of the call's primals, hashed.
    call: u64,
}

impl CopyTape {
    /// Elements copied.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Destination offset (pointer rules; 0 for slice rules).
    pub fn dst_offset(&self) -> usize {
        self.dst_offset
    }
    /// Source offset (pointer rules; 0 for slice rules).
    pub fn src_offset(&self) -> usize {
        self.src_offset
    }
    /// Number of destination shadows (0 for a `Const` destination).
    pub fn width(&self) -> usize {
        self.width
    }
    /// Whether the primal copy ran (false when `dst` was `DuplicatedOnly`, or for a self-copy).
    pub fn primal_ran(&self) -> bool {
        self.primal_ran
    }

    fn check(&self, found: &CopyTape) -> Result<()> {
        let shape = |t: &CopyTape| (t.n, t.dst_offset, t.src_offset, t.width);
        if shape(self) != shape(found) {
            return Err(Error::TapeMismatch(format!(
                "the tape was made for (n, dst offset, src offset, width) = {:?}, \
                 but the reverse was called with {:?}",
                shape(self),
                shape(found)
            )));
        }
        if self.call != found.call {
            return Err(Error::TapeMismatch(
                "the tape was made by a call on other primal buffers: \
                 give each reverse the tape of its own augmented primal"
                    .into(),
            ));
        }
        Ok(())
    }
}

fn lane_name(arg: &str, k: usize) -> String {
    format!("the shadow of `{arg}` (lane {k})")
}

/// The byte ranges of one call: the primals, then each lane's destination and source shadows.
struct Call {
    dst: Region,
    src: Region,
    lanes: Vec<(Option<Region>, Option<Region>)>,
}

/// The bytes two regions share, if any.
fn shared(a: Region, b: Region) -> Option<(u64, u64)> {
    let (start, end) = (a.start.max(b.start), a.end.min(b.end));
    (a.start < a.end && b.start < b.end && start < end).then_some((start, end))
}

impl Call {
    /// Checks how the call's buffers overlap, before anything is written:
    /// - the primals may be the same range (a self-copy), never partially overlap;
    /// - a lane's destination and source shadows likewise;
    /// - no shadow shares a byte with a primal, nor with another lane's shadows.
    ///
    /// Returns how the primals relate.
    fn check(&self) -> Result<Overlap> {
        let primals = check_overlap(|| "the primal `dst` and `src`".into(), self.dst, self.src)?;
        let names = |k: usize| [lane_name("dst", k), lane_name("src", k)];
        for (k, (d, s)) in self.lanes.iter().enumerate() {
            if let (Some(d), Some(s)) = (d, s) {
                check_overlap(|| format!("the shadows of lane {k}"), *d, *s)?;
            }
            for (i, shadow) in [d, s].into_iter().enumerate() {
                let Some(shadow) = shadow else { continue };
                // Names and regions as two arrays, not one of pairs: rustc's `-Zautodiff=Enable`
                // type trees abort on an array whose elements mix pointers and integers.
                for (other, p) in ["the primal `dst`", "the primal `src`"]
                    .into_iter()
                    .zip([self.dst, self.src])
                {
                    if let Some((start, end)) = shared(*shadow, p) {
                        return Err(Error::Aliasing {
                            what: names(k)[i].clone(),
                            other: other.into(),
                            start,
                            end,
                        });
                    }
                }
                for (j, (dj, sj)) in self.lanes.iter().enumerate().take(k) {
                    for (m, r) in [dj, sj].into_iter().enumerate() {
                        if let Some((start, end)) = r.and_then(|r| shared(*shadow, r)) {
                            return Err(Error::Aliasing {
                                what: names(k)[i].clone(),
                                other: names(j)[m].clone(),
                                start,
                                end,
                            });
                        }
                    }
                }
            }
        }
        Ok(primals)
    }

    /// A hash of the primals' ranges ([`super::fingerprint`]): the tape's fingerprint of the
    /// call. Shadows are left out: seeding a cotangent into a fresh buffer between the augmented
    /// primal and the reverse is ordinary use.
    fn fingerprint(&self) -> u64 {
        super::fingerprint([self.dst.start, self.dst.end, self.src.start, self.src.end])
    }
}

/// How `d` and `s` relate; a partial overlap is an error naming `what` (made only then).
fn check_overlap(what: impl FnOnce() -> String, d: Region, s: Region) -> Result<Overlap> {
    match d.relation(s) {
        Overlap::Partial => Err(Error::partial_overlap(what(), d, s)),
        o => Ok(o),
    }
}

/// The shadow work of every lane of a reverse (or, with `zero_only`, of the forward's lanes whose
/// source is `Const`), planned before any lane runs: a lane that would fail fails here.
fn plan_lanes<'s, 'b, X, Y>(
    on: On<'s>,
    lanes: impl Iterator<Item = (Option<&'b X>, Option<&'b Y>)>,
    reverse: bool,
) -> Result<Vec<Option<Plan<'s>>>>
where
    X: ShadowMemory + ?Sized + 'b,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized + 'b,
{
    lanes
        .map(|(dd, ds)| match (dd, ds) {
            (Some(dd), Some(ds)) if reverse => {
                ops::plan(on, Op::AccumulateAndZero, ds, Some(dd)).map(Some)
            }
            (Some(dd), None) => ops::plan::<X, X>(on, Op::Zero, dd, None).map(Some),
            _ => Ok(None),
        })
        .collect()
}
