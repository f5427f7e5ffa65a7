//! The host loops of the two-box operations: `acc[ra] += src[rb]` (and `src[rb] ← 0`) row by
//! row, through `crate::memory::rows`, which never makes one slice over the memory between a
//! box's rows.

use super::super::Source;
use super::super::host::add;
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::ShadowMemory;
use crate::memory::rows::{for_each_row, for_each_row_mut, for_each_row_pair};
use crate::region::Pitched;

/// The host loops for two boxes of one shape, disjoint row by row or (`same`) the same box of the
/// same memory, which doubles. When the two buffers share memory (two raw views of one
/// allocation, their boxes disjoint row by row), no two host views are alive at once: the
/// source's box is read into a temporary first.
pub(super) fn host_pair<A, B>(
    acc: &mut A,
    ra: &Pitched,
    src: Source<'_, B>,
    rb: &Pitched,
    (same, buffers_overlap): (bool, bool),
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    if same {
        return for_each_row_mut(acc, ra, |row| {
            row.iter_mut().for_each(|x| *x = A::Elem::add(*x, *x))
        });
    }
    if buffers_overlap {
        let mut tmp = Vec::with_capacity(ra.elements());
        if let Some(b) = src.get() {
            for_each_row(b, rb, |row| tmp.extend_from_slice(row))?;
        }
        let mut k = 0;
        for_each_row_mut(acc, ra, |row| {
            add(row, &tmp[k..k + row.len()]);
            k += row.len();
        })?;
        if let Source::Take(b) = src {
            for_each_row_mut(b, rb, |row| row.fill(A::Elem::zero()))?;
        }
        return Ok(());
    }
    match src {
        Source::None => Ok(()),
        Source::Read(b) => for_each_row_pair(acc, ra, b, rb, add),
        Source::Take(b) => {
            for_each_row_pair(acc, ra, &*b, rb, add)?;
            for_each_row_mut(b, rb, |row| row.fill(A::Elem::zero()))
        }
    }
}
