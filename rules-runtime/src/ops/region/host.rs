//! The host loops of the two-box operations: `acc[ra] += src[rb]` (and `src[rb] ← 0`) row by
//! row, through `crate::memory::rows`, which never makes one slice over the memory between a
//! box's rows.

use super::super::Source;
use super::super::host::add;
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::ShadowMemory;
use crate::memory::rows::{for_each_row_mut, for_each_row_pair};
use crate::region::Pitched;

/// The host loops for two boxes of one shape, disjoint row by row or (`same`) the same box of the
/// same memory, which doubles.
pub(super) fn host_pair<A, B>(
    acc: &mut A,
    ra: &Pitched,
    src: Source<'_, B>,
    rb: &Pitched,
    same: bool,
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
    match src {
        Source::None => Ok(()),
        Source::Read(b) => for_each_row_pair(acc, ra, b, rb, add),
        Source::Take(b) => {
            for_each_row_pair(acc, ra, &*b, rb, add)?;
            for_each_row_mut(b, rb, |row| row.fill(A::Elem::zero()))
        }
    }
}
