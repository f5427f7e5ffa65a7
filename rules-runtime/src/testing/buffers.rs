//! The buffers a rule check makes: [`TestBuffer`], "a buffer I can make from host data and read
//! back", for each memory kind a rule may take, and [`Env`], where device buffers are made.

#![forbid(unsafe_code)]

use crate::driver::driver;
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::ShadowMemory;
use crate::memory::array::{ArrayElement, CudaArray};
use crate::ops::On;
use cudarc::driver::{
    CudaSlice, CudaStream, DeviceRepr, PinnedHostSlice, UnifiedSlice, ValidAsZeroBits,
};
use std::sync::{Arc, OnceLock};

/// Where a check makes its device buffers: on the rule's own context (read from its plan), or,
/// for a rule that names no stream, on device 0 when a device buffer is first needed.
///
/// Buffers are made and read on a stream of their own and the context is synchronised around
/// every step, so a check never depends on the ordering the rule under test provides.
#[derive(Debug, Default)]
pub struct Env {
    stream: OnceLock<Arc<CudaStream>>,
}

impl Env {
    /// An environment that finds its device (device 0) only when a device buffer is needed:
    /// without a GPU, making one is the runtime's typed error (`Error::NoDriver`, `NoDevice`).
    pub fn host() -> Env {
        Env::default()
    }

    /// An environment on `stream`'s context.
    pub fn on(stream: &Arc<CudaStream>) -> Env {
        let env = Env::default();
        let _ = env.stream.set(stream.clone());
        env
    }

    /// The environment of a rule's plan: its stream's context, if it names one.
    pub(crate) fn of(on: On<'_>) -> Env {
        match on {
            On::Stream(s) => Env::on(&s.context().default_stream()),
            On::Host => Env::host(),
        }
    }

    /// The stream device buffers are made and read on.
    pub fn stream(&self) -> Result<&Arc<CudaStream>> {
        if let Some(s) = self.stream.get() {
            return Ok(s);
        }
        let s = crate::driver::stream(0)?;
        Ok(self.stream.get_or_init(|| s))
    }

    /// Waits for all work on the context of the device buffers (if any was made).
    pub(crate) fn sync(&self) -> Result<()> {
        match self.stream.get() {
            Some(s) => s
                .context()
                .synchronize()
                .map_err(driver("cuCtxSynchronize")),
            None => Ok(()),
        }
    }
}

/// A buffer a rule check can make from host data and read back: the type a rule takes by
/// reference (`[T]`, `Vec<T>`, `CudaSlice<T>`, `PinnedHostSlice<T>`, `UnifiedSlice<T>`,
/// [`CudaArray<T>`]), with the value that owns it.
///
/// Implement it for a buffer type of your own to check rules that take it. Views (`CudaViewMut`,
/// `CudaView`) have none: a view borrows the buffer it views, which a check would have to own
/// while handing out views of a lifetime the caller chose. A rule generic over cudarc's buffer
/// traits (the ready-made ones) runs the same code on a `CudaSlice`: check it there.
pub trait TestBuffer: ShadowMemory {
    /// What holds the buffer (`Vec<T>` for `[T]`, the buffer itself otherwise).
    type Owner;
    /// A buffer holding `data`, made through `env` if it is device memory. `extent` is
    /// `(width, height, depth)` with x fastest, `data.len()` elements: `(data.len(), 1, 1)`
    /// unless the check's [`Shapes`](super::Shapes) give the side an array's extent. Only a
    /// buffer with a shape of its own (a CUDA array) reads it.
    fn make(env: &Env, extent: (usize, usize, usize), data: &[Self::Elem]) -> Result<Self::Owner>;
    /// The buffer's contents, after all work on it has finished.
    fn read(env: &Env, owner: &Self::Owner) -> Result<Vec<Self::Elem>>;
    /// The buffer, as a rule takes it for writing.
    fn arg(owner: &mut Self::Owner) -> &mut Self;
    /// The buffer, as a rule takes it for reading.
    fn arg_ref(owner: &Self::Owner) -> &Self;
}

impl<T: Differentiable> TestBuffer for [T] {
    type Owner = Vec<T>;
    fn make(_: &Env, _: (usize, usize, usize), data: &[T]) -> Result<Vec<T>> {
        Ok(data.to_vec())
    }
    fn read(env: &Env, owner: &Vec<T>) -> Result<Vec<T>> {
        env.sync()?;
        Ok(owner.clone())
    }
    fn arg(owner: &mut Vec<T>) -> &mut [T] {
        owner
    }
    fn arg_ref(owner: &Vec<T>) -> &[T] {
        owner
    }
}

impl<T: Differentiable> TestBuffer for Vec<T> {
    type Owner = Vec<T>;
    fn make(_: &Env, _: (usize, usize, usize), data: &[T]) -> Result<Vec<T>> {
        Ok(data.to_vec())
    }
    fn read(env: &Env, owner: &Vec<T>) -> Result<Vec<T>> {
        env.sync()?;
        Ok(owner.clone())
    }
    fn arg(owner: &mut Vec<T>) -> &mut Vec<T> {
        owner
    }
    fn arg_ref(owner: &Vec<T>) -> &Vec<T> {
        owner
    }
}

impl<T: Differentiable + DeviceRepr> TestBuffer for CudaSlice<T> {
    type Owner = CudaSlice<T>;
    fn make(env: &Env, _: (usize, usize, usize), data: &[T]) -> Result<CudaSlice<T>> {
        let s = env.stream()?;
        let b = s.clone_htod(data).map_err(driver("cuMemcpyHtoDAsync"))?;
        env.sync()?;
        Ok(b)
    }
    fn read(env: &Env, owner: &CudaSlice<T>) -> Result<Vec<T>> {
        env.sync()?;
        let v = env
            .stream()?
            .clone_dtoh(owner)
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        env.sync()?;
        Ok(v)
    }
    fn arg(owner: &mut CudaSlice<T>) -> &mut CudaSlice<T> {
        owner
    }
    fn arg_ref(owner: &CudaSlice<T>) -> &CudaSlice<T> {
        owner
    }
}

impl<T: Differentiable + DeviceRepr + ValidAsZeroBits> TestBuffer for PinnedHostSlice<T> {
    type Owner = PinnedHostSlice<T>;
    fn make(env: &Env, _: (usize, usize, usize), data: &[T]) -> Result<PinnedHostSlice<T>> {
        crate::memory::filled::pinned(env.stream()?, data)
    }
    fn read(env: &Env, owner: &PinnedHostSlice<T>) -> Result<Vec<T>> {
        env.sync()?;
        let s = owner.as_slice().map_err(driver("cuEventSynchronize"))?;
        Ok(s.to_vec())
    }
    fn arg(owner: &mut PinnedHostSlice<T>) -> &mut PinnedHostSlice<T> {
        owner
    }
    fn arg_ref(owner: &PinnedHostSlice<T>) -> &PinnedHostSlice<T> {
        owner
    }
}

impl<T: Differentiable + DeviceRepr + ValidAsZeroBits> TestBuffer for UnifiedSlice<T> {
    type Owner = UnifiedSlice<T>;
    fn make(env: &Env, _: (usize, usize, usize), data: &[T]) -> Result<UnifiedSlice<T>> {
        crate::memory::filled::unified(env.stream()?, data)
    }
    fn read(env: &Env, owner: &UnifiedSlice<T>) -> Result<Vec<T>> {
        env.sync()?;
        let s = owner.as_slice().map_err(driver("cuEventSynchronize"))?;
        Ok(s.to_vec())
    }
    fn arg(owner: &mut UnifiedSlice<T>) -> &mut UnifiedSlice<T> {
        owner
    }
    fn arg_ref(owner: &UnifiedSlice<T>) -> &UnifiedSlice<T> {
        owner
    }
}

/// A CUDA array of the side's extent (a 1-D array of `data.len()` elements unless the shapes
/// give another), written and read whole through the runtime's own host copies
/// ([`CudaArray::copy_from_host`], [`CudaArray::to_host`]), on the environment's context.
impl<T: ArrayElement> TestBuffer for CudaArray<T> {
    type Owner = CudaArray<T>;
    fn make(env: &Env, (w, h, d): (usize, usize, usize), data: &[T]) -> Result<CudaArray<T>> {
        let s = env.stream()?;
        let mut a = CudaArray::new(s.context(), w, h, d)?;
        // The copy checks `data` against the array's elements (`Error::LengthMismatch`).
        a.copy_from_host(s, data)?;
        Ok(a)
    }
    fn read(env: &Env, owner: &CudaArray<T>) -> Result<Vec<T>> {
        env.sync()?;
        let v = owner.to_host(env.stream()?)?;
        env.sync()?;
        Ok(v)
    }
    fn arg(owner: &mut CudaArray<T>) -> &mut CudaArray<T> {
        owner
    }
    fn arg_ref(owner: &CudaArray<T>) -> &CudaArray<T> {
        owner
    }
}

/// Buffers of `extent` for each of `data`'s vectors.
pub(crate) fn make_all<B: TestBuffer + ?Sized>(
    env: &Env,
    extent: (usize, usize, usize),
    data: &[Vec<B::Elem>],
) -> Result<Vec<B::Owner>> {
    data.iter().map(|d| B::make(env, extent, d)).collect()
}

/// The contents of each buffer.
pub(crate) fn read_all<B: TestBuffer + ?Sized>(
    env: &Env,
    owners: &[B::Owner],
) -> Result<Vec<Vec<B::Elem>>> {
    owners.iter().map(|o| B::read(env, o)).collect()
}

/// The `N` buffers of a batch, as a rule takes them (`owners` holds exactly `N`).
pub(crate) fn lanes<B: TestBuffer + ?Sized, const N: usize>(
    owners: &mut [B::Owner],
) -> Result<[&mut B; N]> {
    let found = owners.len();
    let v: Vec<&mut B> = owners.iter_mut().map(B::arg).collect();
    v.try_into()
        .map_err(|_| crate::error::Error::LengthMismatch {
            what: "the shadows of a batch".to_string(),
            expected: N,
            found,
        })
}
