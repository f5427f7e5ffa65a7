//! Saved regions: what a rule with `restore` keeps on its tape. The augmented primal saves the
//! destination's box before the primal overwrites it; the reverse writes it back after the shadow
//! work, so that the reverse of an earlier operation that read the old value sees it again.
//!
//! Device-reachable memory is saved into pooled device memory on the copy's stream (a box copy,
//! no host wait), held by the tape and returned to the pool when the tape drops, ordered after
//! its last use by an event; host-only memory into a host vector.

use super::region::{no_address, route, sync};
use super::{On, Op, Route};
use crate::device::region::{self as boxes, BoxInto, BoxOf};
use crate::driver::pool::{Held, Memory};
use crate::error::{Error, Result};
use crate::memory::rows::{for_each_row, for_each_row_mut};
use crate::memory::view::{DevMut, DevRef};
use crate::memory::{ShadowMemory, ShadowRead};
use crate::region::Pitched;

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

/// The contiguous box of `r`'s shape from element 0: how a box is saved.
fn packed<T>(r: &Pitched) -> Pitched {
    let (w, h, d) = r.shape();
    // Saturating: an empty box may have any width (it is never placed on memory).
    Pitched::slices(0, w, h, d, w.saturating_mul(size_of::<T>()), h)
}

/// Saves `buf[r]` (packed), ordered on the stream `on` names.
pub fn save_region<A: ShadowRead + ?Sized>(
    on: On<'_>,
    buf: &A,
    r: Pitched,
) -> Result<SavedRegion<A::Elem>> {
    r.check::<A::Elem>("the saved buffer", buf.len())?;
    if r.elements() == 0 {
        return Ok(SavedRegion {
            shape: r.shape(),
            store: Store::Host(Vec::new()),
        });
    }
    let kind = buf.kind();
    let shape3 = r.shape();
    let n = r.elements();
    let bytes = n * size_of::<A::Elem>();
    let packed = packed::<A::Elem>(&r);
    if let Some(a) = buf.array() {
        let stream = super::region::array::stream(on, "a CUDA array")?;
        super::region::array::check_context(&a, stream, "the saved buffer")?;
        let p = a.place(&r, "the saved buffer")?;
        let mut held = Held::new(Memory::Device, bytes, stream)?;
        boxes::copy(
            stream,
            BoxInto::Dev(&mut held.view_mut::<A::Elem>(n)?, &packed),
            BoxOf::Array(p),
            shape3,
        )?;
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
            let mut v = Vec::with_capacity(n);
            for_each_row(buf, &r, |row| v.extend_from_slice(row))?;
            Store::Host(v)
        }
        Route::Device { stream } => {
            // Held pooled memory, ordered by events across calls: not recorded into a graph.
            if super::capturing(&stream)? {
                return Err(Error::Capturing { op: "save_region" });
            }
            let mut held = Held::new(Memory::Device, bytes, &stream)?;
            {
                let d = DevRef::of(buf, &stream).ok_or_else(|| no_address(Op::Zero, kind, kind))?;
                boxes::copy(
                    &stream,
                    BoxInto::Dev(&mut held.view_mut(n)?, &packed),
                    BoxOf::Dev(&d, &r),
                    shape3,
                )?;
            }
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
    r.check::<A::Elem>("the restored buffer", buf.len())?;
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
    let n = r.elements();
    let packed = packed::<A::Elem>(&r);
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
        let stream = super::region::array::stream(on, "a CUDA array")?;
        if held.context().cu_ctx() != stream.context().cu_ctx() {
            return Err(elsewhere());
        }
        let p = a.place(&r, "the restored buffer")?;
        super::region::array::check_context(&a, stream, "the restored buffer")?;
        held.wait(stream)?;
        boxes::copy(
            stream,
            BoxInto::Array(p),
            BoxOf::Dev(&held.view::<A::Elem>(n)?, &packed),
            r.shape(),
        )?;
        held.record(stream)?;
        return a.record(stream);
    }
    match (route::<A, A>(on, Op::Zero, &*buf, None)?, &mut saved.store) {
        (Route::Host { after }, Store::Host(v)) => {
            sync(after.as_deref())?;
            let mut k = 0;
            for_each_row_mut(buf, &r, |row| {
                row.copy_from_slice(&v[k..k + row.len()]);
                k += row.len();
            })
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
            {
                let mut d =
                    DevMut::of(buf, &stream).ok_or_else(|| no_address(Op::Zero, kind, kind))?;
                boxes::copy(
                    &stream,
                    BoxInto::Dev(&mut d, &r),
                    BoxOf::Dev(&held.view(n)?, &packed),
                    r.shape(),
                )?;
            }
            held.record(&stream)
        }
        _ => Err(elsewhere()),
    }
}
