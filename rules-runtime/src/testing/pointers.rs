//! The buffers of a pointer rule's check: each side's memory of the kind the rule declares for
//! it (a `Vec` for host memory; device, pinned or unified memory on the rule's context), made
//! from the host image of a call, handed to the rule by address, and read back.

#![forbid(unsafe_code)]

use super::buffers::Env;
use super::checks::Args;
use super::subjects::bad_width;
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::MemoryKind;
use crate::memory::filled::KindBuffer;

/// One call's addresses: the primals, each lane's shadows, and the value and its tangents.
pub(super) struct Ptrs<T> {
    pub(super) y: *mut T,
    pub(super) dy: Vec<*mut T>,
    pub(super) x: *const T,
    pub(super) dx: Vec<*mut T>,
    pub(super) v: T,
    pub(super) dv: Vec<T>,
}

/// The `N` shadow addresses of a batch (`p` holds exactly `N`).
pub(super) fn lanes<T, const N: usize>(p: &[*mut T]) -> Result<[*mut T; N]> {
    p.try_into().map_err(|_| bad_width(p.len()))
}

/// Runs `f` on the addresses of buffers of the declared kinds (`[dst, src]`) holding `a`, after
/// they are made and before they are read back into `a`, with the context synchronised around
/// it. Host memory needs no GPU: a check of host pointers never asks for one.
pub(super) fn with_buffers<T: Differentiable, R>(
    env: &Env,
    [dk, sk]: [MemoryKind; 2],
    a: &mut Args<T>,
    f: impl FnOnce(&mut Ptrs<T>) -> Result<R>,
) -> Result<R> {
    let stream = if dk == MemoryKind::Host && sk == MemoryKind::Host {
        None
    } else {
        Some(env.stream()?)
    };
    let make = |kind, data: &[Vec<T>]| -> Result<Vec<KindBuffer<T>>> {
        data.iter()
            .map(|d| KindBuffer::new(kind, stream, d))
            .collect()
    };
    let mut y = KindBuffer::new(dk, stream, &a.y)?;
    let mut dy = make(dk, &a.dy)?;
    let mut x = KindBuffer::new(sk, stream, &a.x)?;
    let mut dx = make(sk, &a.dx)?;
    let addrs = |b: &mut [KindBuffer<T>]| -> Result<Vec<*mut T>> {
        b.iter_mut().map(|b| b.ptr(stream)).collect()
    };
    let mut p = Ptrs {
        y: y.ptr(stream)?,
        dy: addrs(&mut dy)?,
        x: x.ptr(stream)?.cast_const(),
        dx: addrs(&mut dx)?,
        v: a.v,
        dv: a.dv.clone(),
    };
    env.sync()?;
    let r = f(&mut p)?;
    env.sync()?;
    let read =
        |b: &[KindBuffer<T>]| -> Result<Vec<Vec<T>>> { b.iter().map(|b| b.read(stream)).collect() };
    a.y = y.read(stream)?;
    a.dy = read(&dy)?;
    a.dx = read(&dx)?;
    Ok(r)
}
