//! Host access to the rows of a box, and nothing else: region work on the host goes through these,
//! so that a raw view made for boxes ([`super::raw::RawShadow::for_boxes`]), whose pointer's
//! contract covers the boxes' rows only, is never seen as one slice over the memory between them
//! (another thread may own it). Other buffers are whole host slices, cut into rows.

use super::{ShadowMemory, ShadowRead};
use crate::error::{Error, Result};
use crate::region::Pitched;

fn no_host_view(kind: super::MemoryKind) -> Error {
    Error::UnsupportedKinds {
        op: "host region work",
        dst: kind,
        src: kind,
        why: "device memory needs a CUDA stream: name the copy's stream with `#[stream]`",
    }
}

/// The first element of every row of box `r` of a buffer of `len` elements (checked), in order.
fn rows<T>(what: &str, r: &Pitched, len: usize) -> Result<Vec<usize>> {
    let s = r.check::<T>(what, len)?;
    if r.elements() == 0 {
        // Whatever its height: an empty box has no rows to visit (nor to reserve room for).
        return Ok(Vec::new());
    }
    // A checked box of elements has at most `len` rows.
    let mut v = Vec::with_capacity(r.height.saturating_mul(r.depth));
    s.each_row(r, |e| v.push(e));
    Ok(v)
}

/// Calls `f` with each row of box `r` of `m`, in order.
pub(crate) fn for_each_row<M: ShadowRead + ?Sized>(
    m: &M,
    r: &Pitched,
    mut f: impl FnMut(&[M::Elem]),
) -> Result<()> {
    let starts = rows::<M::Elem>("a box of a host buffer", r, m.len())?;
    let w = r.width;
    if let Some(base) = m.raw_host_base() {
        for e in starts {
            // SAFETY: `e .. e + w` is a row of a box checked against the view's length; the
            // view's contract (`raw_host_base`) makes every element of such a row valid for reads.
            f(unsafe { core::slice::from_raw_parts(base.add(e), w) });
        }
        return Ok(());
    }
    let h = m.host()?.ok_or_else(|| no_host_view(m.kind()))?;
    crate::error::check_len("a host view of a shadow", m.len(), h.len())?;
    for e in starts {
        f(&h[e..e + w]);
    }
    Ok(())
}

/// Calls `f` with each row of box `r` of `m`, writable, in order.
pub(crate) fn for_each_row_mut<M: ShadowMemory + ?Sized>(
    m: &mut M,
    r: &Pitched,
    mut f: impl FnMut(&mut [M::Elem]),
) -> Result<()> {
    let starts = rows::<M::Elem>("a box of a host buffer", r, m.len())?;
    let w = r.width;
    if let Some(base) = m.raw_host_base() {
        for e in starts {
            // SAFETY: `e .. e + w` is a row of a box checked against the view's length, valid for
            // writes by the view's contract; `&mut m` makes this the only access, and rows of one
            // box are disjoint.
            f(unsafe { core::slice::from_raw_parts_mut(base.add(e), w) });
        }
        return Ok(());
    }
    let len = m.len();
    let kind = m.kind();
    let h = m.host_mut()?.ok_or_else(|| no_host_view(kind))?;
    crate::error::check_len("a host view of a shadow", len, h.len())?;
    for e in starts {
        f(&mut h[e..e + w]);
    }
    Ok(())
}

/// The rows of box `ra` of `acc` (writable) and of box `rb` of `src` (read), pairwise, in order:
/// two boxes of one shape. When both are raw views of one allocation the boxes must be disjoint
/// row by row (checked by the callers' overlap check, which refuses a partial overlap and handles
/// the same box apart).
pub(crate) fn for_each_row_pair<A, B>(
    acc: &mut A,
    ra: &Pitched,
    src: &B,
    rb: &Pitched,
    mut f: impl FnMut(&mut [A::Elem], &[A::Elem]),
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowRead<Elem = A::Elem> + ?Sized,
{
    if ra.shape() != rb.shape() {
        return Err(Error::BadRegion {
            what: "the source".into(),
            why: "its box has another shape than the accumulator's".into(),
        });
    }
    let sb = rows::<A::Elem>("the source", rb, src.len())?;
    let w = rb.width;
    // The source's rows first, as slices borrowed from `src` (a distinct object from `acc`, or a
    // raw view whose rows are disjoint from the accumulator's).
    let src_rows: Vec<&[A::Elem]> = match src.raw_host_base() {
        Some(base) => sb
            .iter()
            // SAFETY: rows of a box checked against the view's length, valid for reads by the
            // view's contract, disjoint from every row written below (see the function docs).
            .map(|&e| unsafe { core::slice::from_raw_parts(base.add(e).cast_const(), w) })
            .collect(),
        None => {
            let h = src.host()?.ok_or_else(|| no_host_view(src.kind()))?;
            crate::error::check_len("a host view of a shadow", src.len(), h.len())?;
            sb.iter().map(|&e| &h[e..e + w]).collect()
        }
    };
    let mut k = 0;
    for_each_row_mut(acc, ra, |a| {
        f(a, src_rows[k]);
        k += 1;
    })
}
