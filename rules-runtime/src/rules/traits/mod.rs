//! The rule traits: how generated rules are called. `#[derivative_rule]` generates, next to a
//! primitive `name`, one small item: `name_rule`, a tuple struct of `name`'s arguments other than
//! its buffers (in order), which implements the trait of its kind. The forward rule, the
//! augmented primal and the reverse rule are that trait's provided methods, written once here;
//! they take the buffers as activities:
//!
//! ```
//! use rules_runtime::prelude::*;
//!
//! #[derivative_rule(copy)]
//! fn scaled(#[dst] dst: &mut [f32], #[src] src: &[f32], by: f32) {
//!     for (d, s) in dst.iter_mut().zip(src) {
//!         *d = s * by;
//!     }
//! }
//!
//! let (x, mut dx) = ([1.0f32, 2.0], [0.0f32; 2]);
//! let (mut y, mut dy) = ([0.0f32; 2], [0.0f32; 2]);
//! let mut rule = scaled_rule(2.0);
//! let tape = rule
//!     .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Duplicated::new(&x[..], &mut dx[..]))
//!     .unwrap();
//! dy = [1.0, 1.0];
//! rule.reverse(tape, Duplicated::new(&mut y[..], &mut dy[..]), Duplicated::new(&x[..], &mut dx[..]))
//!     .unwrap();
//! assert_eq!(y, [2.0, 4.0]);
//! ```
//!
//! | kind | trait (references) | trait (raw pointers: `unsafe` methods) |
//! | --- | --- | --- |
//! | `copy` | [`CopyRule`] | [`RawCopyRule`] |
//! | `copy2d`, `copy3d`, a fill from a buffer, `restore`, CUDA arrays | [`RegionRule`] | [`RawRegionRule`] |
//! | `memset` | [`MemsetRule`] | [`RawMemsetRule`] |
//! | `fill` by value | [`FillRule`] | [`RawFillRule`] |
//! | `broadcast`, `reduce`, `all_gather`, `reduce_scatter`, `all_reduce`, `send_recv` | [`CollectiveRule`] | |
//! | `send`, `recv` | [`SendRule`], [`RecvRule`] | |
//!
//! Every trait has a lifetime `'s`: the borrow of the stream (or communicator) that orders the
//! shadow work. Its `#[doc(hidden)]` methods are what the generated impl provides: the plan of a
//! call (stream, boxes) and the primal called on one lane's buffers. They are not an API.

mod collective;
mod copy;
mod fill;
mod in_impl;

pub use collective::{CollectiveRule, RecvRule, SendRule};
pub use copy::{CopyRule, RawCopyRule, RawRegionRule, RegionRule};
pub use fill::{FillGradient, FillRule, MemsetRule, RawFillRule, RawMemsetRule};
pub use in_impl::{Captures, InImpl};
