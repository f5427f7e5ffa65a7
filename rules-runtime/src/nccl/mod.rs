//! NCCL, reached safely, and what collective rules need of their arguments.
//!
//! cudarc loads libnccl when first used and panics when it is missing, so the communicator
//! constructors here and every collective rule ask [`nccl_available`] first and return
//! [`Error::NoNccl`]. Build communicators with [`comm_from_rank`] (one per GPU, in the thread or
//! process that drives it) or [`single_rank`], not with cudarc's constructors directly.
//!
//! NCCL itself carries every byte: `run` calls cudarc's `Comm` methods on device views. What a
//! rule's arguments must be is said by traits with messages a user can act on: [`AsComm`] (the
//! communicator), [`RankArg`] (a root or peer rank), [`NcclElement`] (an element NCCL can sum),
//! [`CollectiveSrc`] / [`CollectiveDst`] (cudarc device buffers). Collective rules need scratch
//! device memory (a received cotangent before it is added in, zeros for a rank whose argument is
//! `Const`): `Scratch` leases it from the runtime's one pool, reused by every stream.
#![forbid(unsafe_code)]

use crate::driver::{driver, require_driver};
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::{ShadowMemory, ShadowRead};
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};
use cudarc::nccl::result::NcclError;
use cudarc::nccl::{NcclType, ReduceOp};
use std::sync::{Arc, OnceLock};

/// cudarc's communicator and unique id. Their constructors (`Id::new`, `Comm::from_rank`,
/// `Comm::from_devices`) panic where NCCL is missing: make them with [`unique_id`],
/// [`comm_from_rank`] and [`single_rank`], which answer [`Error::NoNccl`].
pub use cudarc::nccl::{Comm, Id};

/// Whether the NCCL library can be loaded (checked once, without panicking).
pub fn nccl_available() -> bool {
    // Miri cannot load a shared library (no dlopen / FFI): under it there is never NCCL.
    if cfg!(miri) {
        return false;
    }
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // The names cudarc's loader tries first (it does not try the versioned `libnccl.so.2`).
    *PRESENT.get_or_init(|| crate::driver::library_present(&["libnccl.so", "nccl.dll"]))
}

/// `Ok` when the CUDA driver and NCCL are there; [`Error::NoDriver`] or [`Error::NoNccl`] otherwise.
pub fn require_nccl() -> Result<()> {
    require_driver()?;
    if nccl_available() {
        Ok(())
    } else {
        Err(Error::NoNccl)
    }
}

/// NCCL's version, e.g. `22807` for 2.28.7.
pub fn version() -> Result<i32> {
    require_nccl()?;
    cudarc::nccl::result::get_nccl_version().map_err(nccl_error("ncclGetVersion"))
}

/// A new unique id, made on one rank and handed to the others (`Id::internal` / `Id::uninit`).
pub fn unique_id() -> Result<Id> {
    require_nccl()?;
    Id::new().map_err(nccl_error("ncclGetUniqueId"))
}

/// Joins communicator `id` as `rank` of `world_size`, on the device of `stream`; collectives and
/// their rules then run on `stream`. Blocks until every rank has joined.
///
/// [`Error::InvalidRank`] when `rank` is not below `world_size`; [`Error::NoNccl`] without NCCL.
pub fn comm_from_rank(
    stream: Arc<CudaStream>,
    rank: usize,
    world_size: usize,
    id: Id,
) -> Result<Comm> {
    require_nccl()?;
    if rank >= world_size || i32::try_from(world_size).is_err() {
        return Err(Error::InvalidRank {
            what: "the rank of a new communicator",
            rank: i64::try_from(rank).unwrap_or(i64::MAX),
            world_size,
        });
    }
    // NCCL takes the device from the calling thread's current context.
    stream
        .context()
        .bind_to_thread()
        .map_err(driver("cuCtxSetCurrent"))?;
    Comm::from_rank(stream, rank, world_size, id).map_err(nccl_error("ncclCommInitRank"))
}

/// A communicator of one rank on the device of `stream`: every collective is then a local copy,
/// which makes the rules testable on one GPU.
pub fn single_rank(stream: Arc<CudaStream>) -> Result<Comm> {
    let id = unique_id()?;
    comm_from_rank(stream, 0, 1, id)
}

/// The outcome of one of cudarc's `Comm` calls as this crate's result, for primals of collective
/// rules (cudarc's `NcclError` is not a `std::error::Error`):
/// `nccl::checked("all_gather", comm.all_gather(x, y))`.
pub fn checked<T>(op: &'static str, result: core::result::Result<T, NcclError>) -> Result<()> {
    result.map(drop).map_err(nccl_error(op))
}

/// Maps an NCCL error of operation `op` into [`Error::Nccl`].
pub(crate) fn nccl_error(op: &'static str) -> impl Fn(NcclError) -> Error {
    move |e| Error::Nccl {
        op,
        code: format!("{:?}", e.0),
        message: describe(e.0),
    }
}

/// NCCL's description of `code`, asked of NCCL only when it can be loaded.
///
/// An `NcclError` reaches here without libnccl when a user's primal builds one, or hands
/// [`checked`] a result that did not come from NCCL; cudarc's loader panics where the library is
/// missing, and a missing library must give an `Err`, never a panic. The error stays
/// [`Error::Nccl`], with its operation and code, rather than becoming [`Error::NoNccl`]: the code
/// is what failed, a caller that matches `Error::Nccl` for a failed collective keeps seeing one,
/// and `NoNccl` remains the refusal that [`require_nccl`] raises before any NCCL call.
fn describe(code: cudarc::nccl::sys::ncclResult_t) -> String {
    if !nccl_available() {
        return "NCCL is not loaded, so it cannot describe this code; see \
                `ncclResult_t` in NCCL's documentation"
            .into();
    }
    crate::device::nccl::error_string(code)
}

/// Anything that names an NCCL communicator: `Comm`, `Arc<Comm>`, `Rc<Comm>`, and references.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an NCCL communicator",
    label = "a collective rule's communicator must be a `cudarc::nccl::Comm` (or a reference, `Arc` or `Rc` of one)"
)]
pub trait AsComm {
    /// The communicator.
    fn as_comm(&self) -> &Comm;
}
impl AsComm for Comm {
    fn as_comm(&self) -> &Comm {
        self
    }
}
impl AsComm for Arc<Comm> {
    fn as_comm(&self) -> &Comm {
        self
    }
}
impl AsComm for std::rc::Rc<Comm> {
    fn as_comm(&self) -> &Comm {
        self
    }
}
impl<C: AsComm + ?Sized> AsComm for &C {
    fn as_comm(&self) -> &Comm {
        (**self).as_comm()
    }
}

/// A rank given to a collective rule (`#[root]`, `#[peer]`, `#[send_to]`, `#[recv_from]`): any
/// integer type; negative and too-large values are reported as [`Error::InvalidRank`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a rank",
    label = "a root or peer rank is an integer (`usize`, `i32`, ...)"
)]
pub trait RankArg {
    /// The rank, widened.
    fn rank(&self) -> i64;
}
macro_rules! rank_arg {
    ($($t:ty),*) => {$(
        impl RankArg for $t {
            fn rank(&self) -> i64 {
                i64::try_from(*self).unwrap_or(i64::MAX)
            }
        }
    )*};
}
rank_arg!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);
impl<R: RankArg + ?Sized> RankArg for &R {
    fn rank(&self) -> i64 {
        (**self).rank()
    }
}

/// An element type NCCL can move and sum: `f32`, `f64`, `f16`, `bf16`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an element type NCCL can sum",
    label = "collective rules need `f32`, `f64`, `half::f16` or `half::bf16` elements",
    note = "NCCL has no complex type: move a complex buffer as two real ones, outside the rule"
)]
pub trait NcclElement: Differentiable + NcclType + cudarc::driver::DeviceRepr {}
impl NcclElement for f32 {}
impl NcclElement for f64 {}
impl NcclElement for half::f16 {}
impl NcclElement for half::bf16 {}

/// Sealing of [`CollectiveSrc`] and [`CollectiveDst`]: NCCL is given the view they return and a
/// count taken from [`ShadowRead::len`](crate::ShadowRead::len), so only cudarc's own buffers,
/// whose view is the whole buffer, implement them.
mod sealed {
    pub trait Sealed {}
    impl<T> Sealed for cudarc::driver::CudaSlice<T> {}
    impl<T> Sealed for cudarc::driver::CudaView<'_, T> {}
    impl<T> Sealed for cudarc::driver::CudaViewMut<'_, T> {}
}

/// A buffer a collective rule can send: cudarc device memory of an [`NcclElement`]. Sealed:
/// implemented for `CudaSlice<T>`, `CudaView<T>` and `CudaViewMut<T>`. A read-only `CudaView`
/// is an input only: its shadows, which the reverse pass accumulates into, are writable
/// ([`CollectiveDst`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not device memory an NCCL collective can read",
    label = "collective rules move cudarc device buffers",
    note = "use `CudaSlice<T>`, `CudaView<T>` or `CudaViewMut<T>` with `T` one of `f32`, `f64`, `f16`, `bf16`"
)]
pub trait CollectiveSrc: sealed::Sealed + ShadowRead<Elem: NcclElement> {
    /// The whole buffer, for reading.
    fn view(&self) -> CudaView<'_, Self::Elem>;
}

/// A buffer a collective rule can receive into, and the type of every shadow: writable cudarc
/// device memory.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not device memory an NCCL collective can write",
    label = "collective rules receive into writable cudarc device buffers (an output, and every shadow)",
    note = "use `CudaSlice<T>` or `CudaViewMut<T>` with `T` one of `f32`, `f64`, `f16`, `bf16` (a read-only `CudaView` can be an input's primal only)"
)]
pub trait CollectiveDst: CollectiveSrc + ShadowMemory {
    /// The whole buffer, for writing.
    fn view_mut(&mut self) -> CudaViewMut<'_, Self::Elem>;
}

impl<T: NcclElement> CollectiveSrc for CudaSlice<T> {
    fn view(&self) -> CudaView<'_, T> {
        self.as_view()
    }
}
impl<T: NcclElement> CollectiveDst for CudaSlice<T> {
    fn view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.as_view_mut()
    }
}
impl<T: NcclElement> CollectiveSrc for CudaView<'_, T> {
    fn view(&self) -> CudaView<'_, T> {
        // The whole view (`..` is always in range: cudarc's `slice` does not panic on it).
        self.slice(..)
    }
}
impl<T: NcclElement> CollectiveSrc for CudaViewMut<'_, T> {
    fn view(&self) -> CudaView<'_, T> {
        self.as_view()
    }
}
impl<T: NcclElement> CollectiveDst for CudaViewMut<'_, T> {
    fn view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.slice_mut(..)
    }
}

/// One collective operation, as a rule describes it (sums only: every reduction is `ReduceOp::Sum`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `y ← x` of the root, on every rank.
    Broadcast {
        /// The rank that sends.
        root: usize,
    },
    /// `y ← Σ x` over the ranks, on the root.
    Reduce {
        /// The rank that receives.
        root: usize,
    },
    /// `y ← [x of rank 0, x of rank 1, ...]`.
    AllGather,
    /// `y ← chunk r of Σ x` on rank `r`.
    ReduceScatter,
    /// `y ← Σ x` on every rank.
    AllReduce,
    /// `x` to `peer`.
    Send {
        /// The receiving rank.
        peer: usize,
    },
    /// `y ←` what `peer` sends.
    Recv {
        /// The sending rank.
        peer: usize,
    },
    /// `x` to `to` and `y ←` what `from` sends, as one NCCL group.
    SendRecv {
        /// The rank `x` goes to.
        to: usize,
        /// The rank `y` comes from.
        from: usize,
    },
}

impl Op {
    /// The rule kind, as the attribute spells it.
    pub fn name(self) -> &'static str {
        match self {
            Op::Broadcast { .. } => "broadcast",
            Op::Reduce { .. } => "reduce",
            Op::AllGather => "all_gather",
            Op::ReduceScatter => "reduce_scatter",
            Op::AllReduce => "all_reduce",
            Op::Send { .. } => "send",
            Op::Recv { .. } => "recv",
            Op::SendRecv { .. } => "send_recv",
        }
    }

    /// The transpose: the collective that moves cotangents of the outputs back to the inputs.
    pub fn adjoint(self) -> Op {
        match self {
            Op::Broadcast { root } => Op::Reduce { root },
            Op::Reduce { root } => Op::Broadcast { root },
            Op::AllGather => Op::ReduceScatter,
            Op::ReduceScatter => Op::AllGather,
            Op::AllReduce => Op::AllReduce,
            Op::Send { peer } => Op::Recv { peer },
            Op::Recv { peer } => Op::Send { peer },
            Op::SendRecv { to, from } => Op::SendRecv { to: from, from: to },
        }
    }

    /// Whether rank `r` reads its send buffer.
    pub fn sends(self, r: usize) -> bool {
        match self {
            Op::Broadcast { root } => r == root,
            Op::Recv { .. } => false,
            _ => true,
        }
    }

    /// Whether rank `r` writes its receive buffer.
    pub fn receives(self, r: usize) -> bool {
        match self {
            Op::Reduce { root } => r == root,
            Op::Send { .. } => false,
            _ => true,
        }
    }
}

/// Runs `op` on `comm`'s stream: `send` is read where [`Op::sends`], `recv` written where
/// [`Op::receives`] (either may be `None` elsewhere). Lengths were checked by the caller.
pub(crate) fn run<T: NcclElement>(
    comm: &Comm,
    op: Op,
    send: Option<CudaView<'_, T>>,
    recv: Option<CudaViewMut<'_, T>>,
) -> Result<()> {
    let r = comm.rank();
    let missing = |what| Error::Nccl {
        op: op.name(),
        code: "missing buffer".into(),
        message: format!("rank {r} has no {what} buffer for this collective (a runtime bug)"),
    };
    let send = if op.sends(r) {
        Some(send.ok_or_else(|| missing("send"))?)
    } else {
        None
    };
    let mut recv = if op.receives(r) {
        Some(recv.ok_or_else(|| missing("receive"))?)
    } else {
        None
    };
    // NCCL launches on the current device; the calling thread may have another context bound.
    comm.context()
        .bind_to_thread()
        .map_err(driver("cuCtxSetCurrent"))?;
    let rank = |x: usize| x as i32; // below world_size, which fits in i32
    let sum = ReduceOp::Sum;
    let result = match (op, send.as_ref(), recv.as_mut()) {
        (Op::Broadcast { root }, s, Some(d)) => comm.broadcast(s, d, rank(root)),
        (Op::Reduce { root }, Some(s), d) => comm.reduce(s, d, &sum, rank(root)),
        (Op::AllGather, Some(s), Some(d)) => comm.all_gather(s, d),
        (Op::ReduceScatter, Some(s), Some(d)) => comm.reduce_scatter(s, d, &sum),
        (Op::AllReduce, Some(s), Some(d)) => comm.all_reduce(s, d, &sum),
        (Op::Send { peer }, Some(s), _) => comm
            .send(s, rank(peer))
            .map(|()| cudarc::nccl::result::NcclStatus::Success),
        (Op::Recv { peer }, _, Some(d)) => comm.recv(d, rank(peer)),
        (Op::SendRecv { to, from }, Some(s), Some(d)) => {
            cudarc::nccl::result::group_start().map_err(nccl_error("ncclGroupStart"))?;
            let sent = comm.send(s, rank(to));
            let received = comm.recv(d, rank(from));
            cudarc::nccl::result::group_end().map_err(nccl_error("ncclGroupEnd"))?;
            sent.map_err(nccl_error("ncclSend"))?;
            received
        }
        _ => return Err(missing("send or receive")),
    };
    result.map(|_| ()).map_err(nccl_error(op.name()))
}

pub(crate) use crate::device::nccl::Scratch;

#[cfg(test)]
mod tests;
