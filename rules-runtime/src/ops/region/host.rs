//! The host loops of the two-box operations: `acc[ra] += src[rb]` (and `src[rb] ← 0`) row by
//! row, on host views of the whole buffers (the boxes were checked against their lengths).

use super::super::host::add;
use super::super::{Op, Source};
use super::{host_mut, host_of};
use crate::element::Differentiable;
use crate::error::Result;
use crate::memory::ShadowMemory;
use crate::region::{Pitched, Strides};

/// The host loops for two boxes. When the two buffers share memory (two raw views of one
/// allocation, their boxes disjoint row by row), no two host views may be alive at once, so the
/// source's box is read into a temporary first.
#[allow(clippy::too_many_arguments)]
pub(super) fn host_pair<A, B>(
    op: Op,
    acc: &mut A,
    sa: Strides,
    src: Source<'_, B>,
    sb: Strides,
    r: &Pitched,
    same: bool,
    buffers_overlap: bool,
) -> Result<()>
where
    A: ShadowMemory + ?Sized,
    B: ShadowMemory<Elem = A::Elem> + ?Sized,
{
    let w = r.width;
    if same {
        let a = host_mut(op, acc)?;
        sa.each_row(r, |e| {
            a[e..e + w]
                .iter_mut()
                .for_each(|x| *x = A::Elem::add(*x, *x))
        });
        return Ok(());
    }
    if buffers_overlap {
        let mut tmp = Vec::with_capacity(r.elements());
        {
            let h = host_of(op, src.get().expect("source"))?;
            sb.each_row(r, |e| tmp.extend_from_slice(&h[e..e + w]));
        }
        let a = host_mut(op, acc)?;
        let mut k = 0;
        sa.each_row(r, |e| {
            add(&mut a[e..e + w], &tmp[k..k + w]);
            k += w;
        });
        if let Source::Take(b) = src {
            let h = host_mut(op, b)?;
            sb.each_row(r, |e| h[e..e + w].fill(A::Elem::zero()));
        }
        return Ok(());
    }
    let a = host_mut(op, acc)?;
    match src {
        Source::None => {}
        Source::Read(b) => {
            let h = host_of(op, b)?;
            let mut rows_b = Vec::with_capacity(r.height * r.depth);
            sb.each_row(r, |e| rows_b.push(e));
            let mut k = 0;
            sa.each_row(r, |e| {
                add(&mut a[e..e + w], &h[rows_b[k]..rows_b[k] + w]);
                k += 1;
            });
        }
        Source::Take(b) => {
            let h = host_mut(op, b)?;
            let mut rows_b = Vec::with_capacity(r.height * r.depth);
            sb.each_row(r, |e| rows_b.push(e));
            let mut k = 0;
            sa.each_row(r, |e| {
                let s = &mut h[rows_b[k]..rows_b[k] + w];
                add(&mut a[e..e + w], s);
                s.fill(A::Elem::zero());
                k += 1;
            });
        }
    }
    Ok(())
}
