//! # rules-runtime
//!
//! Derivative rules for GPU memory copies. The seed: `f(x) = sum(abs2, to_host(to_device(x)))`
//! has `df/dx = 2x` exactly, through both copies. Here the two copies are host copies, so that
//! the example runs anywhere; on a GPU they are `stream.memcpy_htod` into a `CudaSlice` and
//! `stream.memcpy_dtoh` back, annotated the same way, with the stream as their first parameter.
//!
//! ```
//! use rules_runtime::prelude::*;
//!
//! /// "Upload": copies `src` into `dst`.
//! #[derivative_rule(copy)]
//! fn to_device(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
//!     dst.copy_from_slice(src);
//! }
//!
//! /// "Download": the copy back.
//! #[derivative_rule(copy)]
//! fn to_host(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
//!     dst.copy_from_slice(src);
//! }
//!
//! let x = [1.0f32, -2.0, 3.5];
//! let mut dx = [0.0f32; 3];
//! let (mut d, mut dd) = ([0.0f32; 3], [0.0f32; 3]); // the "device" copy, and its shadow
//! let (mut y, mut dy) = ([0.0f32; 3], [0.0f32; 3]); // back on the host
//!
//! // Forward sweep: the augmented primals run the copies and return their tapes.
//! let t1 = to_device_rule()
//!     .augmented_primal(Duplicated::new(&mut d[..], &mut dd[..]), Duplicated::new(&x[..], &mut dx[..]))?;
//! let t2 = to_host_rule()
//!     .augmented_primal(Duplicated::new(&mut y[..], &mut dy[..]), Duplicated::new(&d[..], &mut dd[..]))?;
//! let f: f32 = y.iter().map(|v| v * v).sum();
//! assert_eq!(f, 1.0 + 4.0 + 12.25);
//!
//! // The cotangent of f = sum(abs2, y) is 2y ...
//! for (g, v) in dy.iter_mut().zip(&y) {
//!     *g = 2.0 * v;
//! }
//! // ... and each reverse, in the opposite order, moves its destination's cotangent into its
//! // source's (d_src += d_dst, then d_dst = 0).
//! to_host_rule()
//!     .reverse(t2, Duplicated::new(&mut y[..], &mut dy[..]), Duplicated::new(&d[..], &mut dd[..]))?;
//! to_device_rule()
//!     .reverse(t1, Duplicated::new(&mut d[..], &mut dd[..]), Duplicated::new(&x[..], &mut dx[..]))?;
//! assert_eq!(dx, [2.0, -4.0, 7.0]); // 2x, exactly
//! assert_eq!((dd, dy), ([0.0; 3], [0.0; 3])); // the cotangents on the way were consumed
//! # Ok::<(), rules_runtime::Error>(())
//! ```
//!
//! Add it with `rules-runtime = "0.1"` (it re-exports the attribute and [`cudarc`]). Annotate a
//! copy primitive with [`#[derivative_rule(copy)]`](derivative_rule) and get, next to it, its rule
//! object: `name_rule`, holding the primitive's arguments other than its buffers, whose methods
//! are the forward (tangent) rule and the augmented-primal + reverse pair. The methods are written
//! once here, on the rule traits ([`CopyRule`] and the others, all in [`prelude`]); they call this
//! crate for the shadow work (accumulate, zero, fused accumulate-and-zero) in every memory kind.
//!
//! Beyond one GPU: a copy between two devices is a `copy` rule whose reverse accumulates across
//! them (the operations of [`ops`] route work across contexts; [`peer`] enables direct access);
//! NCCL collectives have rules of their own (`#[derivative_rule(all_gather)]`, `broadcast`,
//! `reduce`, `reduce_scatter`, `all_reduce`, `send`, `recv`, `send_recv`), whose reverse is the
//! adjoint collective ([`nccl`]).
//!
//! The public face: the activities, [`ops`] (the one entry point for shadow work, in every memory
//! kind and across contexts), the memory traits ([`ShadowRead`], [`ShadowMemory`], both `unsafe`
//! to implement: the runtime's kernels trust them), [`cuda`] (driver probing that never panics),
//! [`nccl`], the one [`Error`], the rule traits. Rule bodies and kernel launches are private;
//! generated code reaches what it needs through a hidden module. The `testing` feature adds
//! `testing`: adjoint and finite-difference checks.
//!
//! Inside, the crate stands on floors that import only downwards: errors and the driver, memory
//! kinds, device operations, routes ([`ops`]), rules, the `std::autodiff` bridge ([`autodiff`]).
//! See `docs/map.md` in the repository: each floor, its modules, and where `unsafe` lives.
//!
//! ## The checked mode
//!
//! With the `checked` feature, every rule checks, right after each call of its primitive and
//! before any shadow work, that the primitive did what the rule assumes in the destination's box:
//! a copy `dst == src`, a memset one repeated bit pattern, a fill the value (bitwise; host memory
//! by the host, device memory by a compare kernel on the copy's stream). A disagreement is
//! [`Error::PrimalDisagrees`], naming the rule, the parameter, the lane, the count and the first
//! elements, and saying what to change; nothing else is written. Every call then waits for its
//! stream (a capturing stream is refused with [`Error::Capturing`]), and a forward or augmented
//! primal costs 2-4× the unchecked one: for tests and debugging, not production. See
//! `docs/checked.md` in the repository.
//!
//! ## Without a driver
//!
//! Nothing in this crate panics when the CUDA driver or NCCL is missing: [`cuda`] and [`nccl`]
//! look for the library first and answer [`Error::NoDriver`], [`Error::NoDevice`] or
//! [`Error::NoNccl`], and an [`Error`] formats without the driver (a primal's cudarc
//! `DriverError` is held as an [`error::PrimalDriverError`]). The re-exported [`cudarc`] does not
//! look first: a call of it that reaches a CUDA library loads the library on first use and
//! panics where it is missing. Call these instead:
//!
//! | cudarc (panics without the library) | instead |
//! | --- | --- |
//! | `driver::CudaContext::new(ordinal)` | [`cuda::context`] (`Err(NoDriver)`, `Err(NoDevice)`) |
//! | `driver::CudaContext::device_count()` | [`cuda::device_count`] |
//! | a new stream of a new context | [`cuda::stream`] |
//! | formatting a `driver::DriverError` (`{e}`, `{e:?}`, `unwrap()`) | `?` into [`Result`] ([`Error::Driver`]), [`Error::primal`]`(e)` (what a rule does with a primal's error), or the code `e.0` |
//! | `nccl::Id::new()` | [`nccl::unique_id`] |
//! | `nccl::Comm::from_rank(..)`, `Comm::from_devices(..)` | [`nccl::comm_from_rank`], [`nccl::single_rank`] |
//! | `nccl::result::get_nccl_version()` | [`nccl::version`] |
//!
//! Anything else that reaches a library (the driver, NVRTC, NCCL) before this crate has made a
//! context or a communicator: ask [`cuda::driver_available`] or [`nccl::nccl_available`] first.
//! A context or communicator made by the functions above shows that its library is loaded, so
//! cudarc's methods on it do not panic for want of it.
#![deny(missing_docs)]

pub mod activity;
mod address;
pub mod array_rules;
pub mod autodiff;
mod collective;
pub mod cudarc_rules;
mod device;
mod driver;
pub mod element;
pub mod error;
pub mod memory;
pub mod nccl;
pub mod ops;
mod par;
mod region;
mod rules;
#[cfg(feature = "testing")]
pub mod testing;

/// The CUDA driver, reached safely: cudarc panics when libcuda is missing, so every function here
/// asks [`driver_available`](cuda::driver_available) first and returns [`Error::NoDriver`]
/// (or [`Error::NoDevice`]) instead.
pub mod cuda {
    pub use crate::driver::{
        context, device_count, driver_available, prepare, require_driver, stream,
    };
    pub use crate::ops::reserve::{Reserved, reserve};
}

/// Peer access between devices. The copy rules do not need it (their reverse across devices is
/// staged through peer copies); enabling it makes primal peer copies faster.
pub mod peer {
    pub use crate::device::peer::{can_access_peer, enable_peer_access};
}

/// cudarc, re-exported so that users depend on one crate and name the same buffer types. Its
/// calls into a CUDA library panic where that library is missing: see the crate docs ("Without a
/// driver") for what to call instead.
pub use cudarc;

pub use activity::{Active, Const, Dual, Duplicated, DuplicatedOnly};
pub use collective::CollectiveTape;
pub use element::{Differentiable, Dtype};
pub use error::{Assumed, Error, PrimalDisagreement, Result};
pub use memory::{MemoryKind, ShadowMemory, ShadowRead};
pub use ops::region::{accumulate_and_zero_region, accumulate_region, fill_region, zero_region};
pub use ops::{On, accumulate, accumulate_and_zero, zero};
pub use ops::{SavedRegion, accumulate_sum_region, restore_region, save_region, sum_region};
pub use region::Pitched;
pub use rules::{
    CollectiveRule, CopyRule, CopyTape, FillGradient, FillRule, MemsetRule, PrimalOutcome,
    RawCopyRule, RawFillRule, RawMemsetRule, RawRegionRule, RecvRule, RegionRule, RegionTape,
    SendRule,
};
pub use rules_macro::derivative_rule;

/// What a crate that defines or calls rules needs: the attribute, the activities, and the rule
/// traits, whose methods are the forward rule, the augmented primal and the reverse rule.
///
/// `#[derivative_rule]` generates, next to a primitive `name`, one item: `name_rule`, a tuple
/// struct of `name`'s arguments other than its buffers (in order), which implements the trait of
/// its kind (in an `impl` block, with `in_impl`, `Self::name_rule(...)` returns an object that
/// does). For an `unsafe fn` on references, `name_rule(...)` is an `unsafe` function with the
/// primitive's contract, and the struct's arguments cannot be reached without `unsafe`. The methods take the buffers as activities, the destination first:
/// `forward(dst, src)`, `augmented_primal(dst, src)` (returns the tape), `reverse(tape, dst, src)`.
///
/// | kind | trait (references) | trait (raw pointers: `unsafe` methods) |
/// | --- | --- | --- |
/// | `copy` | [`CopyRule`] | [`RawCopyRule`] |
/// | `copy2d`, `copy3d`, a fill from a buffer, `restore`, CUDA arrays | [`RegionRule`] | [`RawRegionRule`] |
/// | `memset` | [`MemsetRule`] | [`RawMemsetRule`] |
/// | `fill` by value | [`FillRule`] | [`RawFillRule`] |
/// | `broadcast`, `reduce`, `all_gather`, `reduce_scatter`, `all_reduce`, `send_recv` | [`CollectiveRule`] | |
/// | `send`, `recv` | [`SendRule`], [`RecvRule`] | |
///
/// It also holds what a caller names next: the tapes, [`Error`], [`Result`] (whose error type
/// defaults to [`Error`], so `Result<T, OtherError>` keeps its meaning), [`On`] and
/// [`Differentiable`]. Next to another glob import that brings its own `Error` or `Result` (a
/// parent module's, through `use super::*` in a test module), such a name is ambiguous where it
/// is used: import the one you mean by name (`use anyhow::Result;`), which takes precedence
/// over every glob.
pub mod prelude {
    pub use crate::activity::{Active, Const, Dual, Duplicated, DuplicatedOnly};
    pub use crate::collective::CollectiveTape;
    pub use crate::element::Differentiable;
    // `Result<T, E = Error>`: a glob import of the prelude leaves `Result<T, OtherError>` meaning
    // what it meant.
    pub use crate::error::{Error, Result};
    pub use crate::ops::On;
    pub use crate::rules::{
        CollectiveRule, CopyRule, CopyTape, FillRule, MemsetRule, RawCopyRule, RawFillRule,
        RawMemsetRule, RawRegionRule, RecvRule, RegionRule, RegionTape, SendRule,
    };
    pub use rules_macro::derivative_rule;
}

/// The items `#[derivative_rule(.., autodiff)]` generates for `std::autodiff` (see
/// [`autodiff`]), as they are, with the `autodiff` feature; without it, the stand-in after
/// `else` (a `<name>_ad` whose every call is a compile error naming the feature). A feature, not
/// a `cfg` of the user's crate: a `#[cfg(name)]` in generated code is reported by rustc's
/// `unexpected_cfgs` lint in every crate that has a bridged rule, unless each declares the name.
#[cfg(feature = "autodiff")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_autodiff {
    ({ $($items:tt)* } else { $($stand_in:tt)* }) => { $($items)* };
}

/// Without the `autodiff` feature: the stand-in.
#[cfg(not(feature = "autodiff"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_autodiff {
    ({ $($items:tt)* } else { $($stand_in:tt)* }) => { $($stand_in)* };
}

/// Items used by generated code. Not a public API: names here may change at any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::__if_autodiff as if_autodiff;
    pub use crate::activity::{
        Activity, DstArg, DstPtr, ForwardValue, LaneArray, ReverseValue, SameWidth, SrcArg, SrcPtr,
    };
    pub use crate::collective::{Collective, CollectiveTape};
    pub use crate::element::Differentiable;
    pub use crate::error::{Error, Result};
    pub use crate::memory::{MemoryKind, SameElem, ShadowMemory, ShadowRead};
    pub use crate::nccl::{AsComm, CollectiveDst, CollectiveSrc, NcclElement, RankArg};
    pub use crate::ops::{AsStream, On};
    pub use crate::region::Pitched;
    pub use crate::rules::{
        Boxes, Captures, CollectiveRule, CopyRule, CopyTape, FillRule, InImpl, MemsetRule,
        PrimalOutcome, PtrCopy, RawCopyRule, RawFillRule, RawMemsetRule, RawRegion, RawRegionRule,
        RecvRule, RegionRule, RegionTape, RuleNames, SendRule, UnsafeArgs,
    };
    pub use ::core;
    /// The `std::autodiff` bridges' runtime side.
    pub mod ad {
        pub use crate::autodiff::AdArray;
        pub use crate::autodiff::raw::{
            AdRule, ArraySide, BufSide, Fill, Linear, Memset, RefFill, RefMemset, RefRegion,
            Region, Registration, Side, SliceSide, Streams, array_aug, array_fill_aug,
            array_fill_fwd, array_fill_primal, array_fill_rev, array_fwd, array_primal, array_rev,
            bridge_aug, bridge_fwd, bridge_primal, bridge_rev, fill_aug, fill_fwd, fill_primal,
            fill_rev, save, take,
        };
        pub use crate::autodiff::{AdBuf, take_error};
        pub use crate::element::Differentiable;
        pub use crate::memory::MemoryKind;
        pub use ::core::ffi::c_void;
    }

    /// The bound of the `<name>_ad` that `#[derivative_rule(.., autodiff)]` stands in with when
    /// the runtime's `autodiff` feature is off: no type implements it (it is sealed), so a call
    /// of that function is a compile error at the call, with this message, instead of "cannot
    /// find function" or a call that does nothing.
    #[diagnostic::on_unimplemented(
        message = "this `*_ad` function of a `#[derivative_rule(.., autodiff)]` rule needs the `autodiff` feature of `rules-runtime`",
        label = "called without the `autodiff` feature",
        note = "the std::autodiff bridges are emitted only with it: `rules-runtime = {{ version = \"0.1\", features = [\"autodiff\"] }}` in the Cargo.toml of the crate that defines the rule (docs/autodiff.md)"
    )]
    pub trait NeedsAutodiffFeature: sealed::Sealed {}
    mod sealed {
        /// Implemented by no type.
        pub trait Sealed {}
    }

    /// The error of a stand-in's methods: they exist in code that does not compile, and are
    /// never called there; called anyway (this module is public), they answer this.
    fn stub_error() -> Error {
        Error::UnsupportedKinds {
            op: "a rule with a compile error",
            dst: crate::MemoryKind::Host,
            src: crate::MemoryKind::Host,
            why: "the rule did not compile: its stand-in has nothing to run",
        }
    }

    /// What a rule with a compile error stands in with (two activities): its methods take
    /// anything and never run, so that its callers see the rule's error and nothing else.
    pub struct RuleStub2;
    impl RuleStub2 {
        /// Stands in for the forward rule.
        pub fn forward<A, B>(&mut self, _: A, _: B) -> Result<()> {
            Err(stub_error())
        }
        /// Stands in for the augmented primal.
        pub fn augmented_primal<A, B>(&mut self, _: A, _: B) -> Result<RuleStub2> {
            Err(stub_error())
        }
        /// Stands in for the reverse rule.
        pub fn reverse<T, A, B>(&mut self, _: T, _: A, _: B) -> Result<()> {
            Err(stub_error())
        }
    }

    /// As [`RuleStub2`], for a fill by value, whose reverse returns `d_v` per lane: `let [dv] =
    /// rule.reverse(..)?` still reads.
    pub struct RuleStubFill<V>(core::marker::PhantomData<V>);
    impl<V> RuleStubFill<V> {
        /// Makes the stand-in.
        pub fn new() -> Self {
            RuleStubFill(core::marker::PhantomData)
        }
        /// Stands in for the forward rule.
        pub fn forward<A, B>(&mut self, _: A, _: B) -> Result<()> {
            Err(stub_error())
        }
        /// Stands in for the augmented primal.
        pub fn augmented_primal<A, B>(&mut self, _: A, _: B) -> Result<RuleStub2> {
            Err(stub_error())
        }
        /// Stands in for the reverse rule: its lanes are the destination's, as the rule's are, so
        /// that `let dv = rule.reverse(..)?` infers what it would.
        #[allow(clippy::type_complexity)]
        pub fn reverse<T, A: crate::activity::Activity, B: crate::activity::ReverseValue<V>>(
            &mut self,
            _: T,
            _: A,
            _: B,
        ) -> Result<<B as crate::activity::ReverseValue<V>>::Gradient<A::Width>> {
            Err(stub_error())
        }
    }
    impl<V> Default for RuleStubFill<V> {
        fn default() -> Self {
            Self::new()
        }
    }

    /// As [`RuleStub2`], for rules with one activity (memset, send, recv).
    pub struct RuleStub1;
    impl RuleStub1 {
        /// Stands in for the forward rule.
        pub fn forward<A>(&mut self, _: A) -> Result<()> {
            Err(stub_error())
        }
        /// Stands in for the augmented primal.
        pub fn augmented_primal<A>(&mut self, _: A) -> Result<RuleStub1> {
            Err(stub_error())
        }
        /// Stands in for the reverse rule.
        pub fn reverse<T, A>(&mut self, _: T, _: A) -> Result<()> {
            Err(stub_error())
        }
    }

    /// An extent, offset or length parameter (`#[width]`, `#[len]`, ...): `usize`, however the
    /// user spells it (`size_t`, `core::primitive::usize`).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not `usize`: extents, offsets and lengths count elements, rows or bytes",
        label = "write `usize` here",
        note = "convert at the call instead, e.g. `usize::try_from(n)?`"
    )]
    pub trait Extent: Copy {
        /// The value.
        fn get(self) -> usize;
    }
    impl Extent for usize {
        #[inline]
        fn get(self) -> usize {
            self
        }
    }

    /// Reads an extent parameter.
    #[inline]
    pub fn extent<T: Extent>(x: T) -> usize {
        x.get()
    }

    /// A pass-through argument is used once per lane, so it must be `Copy` (references are).
    #[diagnostic::on_unimplemented(
        message = "the pass-through argument type `{Self}` is not `Copy`",
        label = "a derivative rule passes this argument to the primal once per lane",
        note = "take it by reference (`&{Self}`) instead"
    )]
    pub trait PassThrough: Copy {}
    impl<T: Copy> PassThrough for T {}

    /// A copy of a pass-through argument for one call of the primal. Generated code calls it at
    /// the argument's type, so a type that is not `Copy` is reported there (and only there: the
    /// argument is borrowed, never moved out of the closure).
    #[inline]
    pub fn pass_through<T: PassThrough>(arg: &T) -> T {
        *arg
    }
}
