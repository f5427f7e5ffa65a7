//! The rule traits: how generated rules are called. `#[derivative_rule]` generates, next to a
//! primitive `name`, one small item: `name_rule`, a tuple struct of `name`'s arguments other than
//! its buffers (in order), which implements the trait of its kind. The forward rule, the
//! augmented primal and the reverse rule are that trait's provided methods, written once here;
//! they take the buffers as activities. The table of kinds and traits is in
//! `rules_runtime::prelude`'s docs.
//!
//! Every trait has a lifetime `'s`: the borrow of the stream (or communicator) that orders the
//! shadow work. Its `#[doc(hidden)]` methods are what the generated impl provides: the plan of a
//! call (stream, boxes) and the primal called on one lane's buffers. They are not an API.

mod collective;
mod copy;
mod fill;
mod in_impl;
mod unsafe_args;

pub use collective::{CollectiveRule, RecvRule, SendRule};
pub use copy::{CopyRule, RawCopyRule, RawRegionRule, RegionRule};
pub use fill::{FillGradient, FillRule, MemsetRule, RawFillRule, RawMemsetRule};
pub use in_impl::{Captures, InImpl};
pub use unsafe_args::UnsafeArgs;

use crate::error::Result;
use crate::rules::PrimalOutcome;

/// The outcome of a rule's `__primal`, already the runtime's result: passed on as it is (a
/// `Result<(), Error>` would be wrapped into `Error::Primal` a second time).
pub(crate) struct Ran(pub(crate) Result<()>);
impl PrimalOutcome for Ran {
    fn into_result(self) -> Result<()> {
        self.0
    }
}
