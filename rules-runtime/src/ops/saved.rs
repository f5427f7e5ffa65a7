//! Saved regions: what a rule with `restore` keeps on its tape. The augmented primal saves the
//! destination's box before the primal overwrites it; the reverse writes it back after the shadow
//! work, so that the reverse of an earlier operation that read the old value sees it again.
//!
//! Device-reachable memory is saved into pooled device memory on the copy's stream (a box copy,
//! no host wait), held by the tape and returned to the pool when the tape drops, ordered after
//! its last use by an event; host-only memory into a host vector.

use super::region::{no_address, route, shape, sync};
use super::{On, Op, Route};
use crate::device::pool::{Held, Memory};
use crate::device::region::{At, copy_box};
use crate::element::Differentiable;
use crate::error::{Error, Result};
use crate::memory::{ShadowMemory, ShadowRead};
use crate::region::{Pitched, Strides};
use cudarc::driver::CudaStream;

/// The contents of a box, saved by [`save_region`] and written back by [`restore_region`].
pub struct SavedRegion<T> {
    shape: (usize, usize, usize),
    store: Store<T>,
}

enum Store<T> {
    /// Packed host copy.
    Host(Vec<T>),
    /// Packed copy in pooled device memory.
    Device(Held),
}

impl<T> core::fmt::Debug for SavedRegion<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let place = match self.store {
            Store::Host(_) => "host",
            Store::Device(_) => "device",
        };
        f.debug_struct("SavedRegion")
            .field("shape", &self.shape)
            .field("in", &place)
            .finish()
    }
}

/// Saves `buf[r]` (packed), ordered on the stream `on` names.
pub fn save_region<A: ShadowRead + ?Sized>(
    on: On<'_>,
    buf: &A,
    r: Pitched,
) -> Result<SavedRegion<A::Elem>> {
    let s = r.check::<A::Elem>("the saved buffer", buf.len())?;
    let kind = buf.kind();
    let shape3 = r.shape();
    if let Some(a) = buf.array() {
        let stream = super::array::stream(on, "a CUDA array")?;
        let p = super::array::place(&a, &r, "the saved buffer")?;
        super::array::check_context(&a, stream, "the saved buffer")?;
        let mut held = Held::new(Memory::Device, r.elements() * size_of::<A::Elem>(), stream)?;
        // SAFETY: the array box was checked; the held buffer has room for it packed.
        unsafe { box_copy::<A::Elem>(stream, packed(held.ptr(), &r), p.at(), &r)? };
        held.record(stream)?;
        a.record(stream)?;
        return Ok(SavedRegion {
            shape: shape3,
            store: Store::Device(held),
        });
    }
    let store = match route::<A, A>(on, Op::Zero, buf, None)? {
        Route::Nothing => Store::Host(Vec::new()),
        Route::Host { after } => {
            sync(after.as_deref())?;
            let h = super::region::host_of(Op::Zero, buf)?;
            let mut v = Vec::with_capacity(r.elements());
            s.each_row(&r, |e| v.extend_from_slice(&h[e..e + r.width]));
            Store::Host(v)
        }
        Route::Device { stream } => {
            // Held pooled memory, ordered by events across calls: not recorded into a graph.
            if super::capturing(&stream)? {
                return Err(Error::Capturing { op: "save_region" });
            }
            let bytes = r.elements() * size_of::<A::Elem>();
            let mut held = Held::new(Memory::Device, bytes, &stream)?;
            let d = buf
                .device(&stream)
                .ok_or_else(|| no_address(Op::Zero, kind, kind))?;
            // SAFETY: the box was checked against the buffer; the held buffer has room for it
            // packed; both ordered on `stream`.
            unsafe {
                box_copy::<A::Elem>(
                    &stream,
                    packed(held.ptr(), &r),
                    boxed::<A::Elem>(d.addr(), s),
                    &r,
                )?
            };
            held.record(&stream)?;
            Store::Device(held)
        }
        _ => return Err(no_address(Op::Zero, kind, kind)),
    };
    Ok(SavedRegion {
        shape: shape3,
        store,
    })
}

/// Writes `saved` back into `buf[r]`, ordered on the stream `on` names. The box must have the
/// shape it was saved with, and be reached the same way (host or device) as when it was saved.
pub fn restore_region<A: ShadowMemory + ?Sized>(
    on: On<'_>,
    buf: &mut A,
    r: Pitched,
    saved: &mut SavedRegion<A::Elem>,
) -> Result<()> {
    let s = r.check::<A::Elem>("the restored buffer", buf.len())?;
    if r.shape() != saved.shape {
        return Err(Error::BadRegion {
            what: "the restored buffer".into(),
            why: format!(
                "its box is {:?} (width, height, depth) but {:?} was saved",
                r.shape(),
                saved.shape
            ),
        });
    }
    if r.elements() == 0 {
        return Ok(());
    }
    let kind = buf.kind();
    let elsewhere = || Error::UnsupportedKinds {
        op: "restore",
        dst: kind,
        src: kind,
        why: "the region was saved on another route (host or device, or another device) than \
              the one it is restored on: restore with the stream it was saved with",
    };
    if let Some(a) = buf.array() {
        let Store::Device(held) = &mut saved.store else {
            return Err(elsewhere());
        };
        let stream = super::array::stream(on, "a CUDA array")?;
        if held.context().cu_ctx() != stream.context().cu_ctx() {
            return Err(elsewhere());
        }
        let p = super::array::place(&a, &r, "the restored buffer")?;
        super::array::check_context(&a, stream, "the restored buffer")?;
        held.wait(stream)?;
        // SAFETY: the array box was checked; the held buffer holds the packed box of this shape.
        unsafe { box_copy::<A::Elem>(stream, p.at(), packed(held.ptr(), &r), &r)? };
        held.record(stream)?;
        return a.record(stream);
    }
    match (route::<A, A>(on, Op::Zero, &*buf, None)?, &mut saved.store) {
        (Route::Host { after }, Store::Host(v)) => {
            sync(after.as_deref())?;
            let h = super::region::host_mut(Op::Zero, buf)?;
            let mut k = 0;
            s.each_row(&r, |e| {
                h[e..e + r.width].copy_from_slice(&v[k..k + r.width]);
                k += r.width;
            });
            Ok(())
        }
        (Route::Device { stream }, Store::Device(held)) => {
            if super::capturing(&stream)? {
                return Err(Error::Capturing {
                    op: "restore_region",
                });
            }
            if held.context().cu_ctx() != stream.context().cu_ctx() {
                return Err(elsewhere());
            }
            held.wait(&stream)?;
            let d = buf
                .device_mut(&stream)
                .ok_or_else(|| no_address(Op::Zero, kind, kind))?;
            // SAFETY: the box was checked; the held buffer holds the packed box of this shape;
            // ordered on `stream` after its last use.
            unsafe {
                box_copy::<A::Elem>(
                    &stream,
                    boxed::<A::Elem>(d.addr(), s),
                    packed(held.ptr(), &r),
                    &r,
                )?
            };
            held.record(&stream)
        }
        _ => Err(elsewhere()),
    }
}

type BoxSide = (At, u64, u64);

fn packed(ptr: u64, r: &Pitched) -> BoxSide {
    (
        At::Unified(ptr),
        r.width as u64,
        (r.width * r.height) as u64,
    )
}

fn boxed<T>(addr: u64, s: Strides) -> BoxSide {
    (
        At::Unified(addr + (s.offset * size_of::<T>()) as u64),
        s.row as u64,
        s.slice as u64,
    )
}

/// # Safety
/// As [`copy_box`].
unsafe fn box_copy<T: Differentiable>(
    stream: &CudaStream,
    dst: BoxSide,
    src: BoxSide,
    r: &Pitched,
) -> Result<()> {
    // SAFETY: by the caller's contract.
    unsafe { copy_box(stream, size_of::<T>(), dst, src, shape(r)) }
}
