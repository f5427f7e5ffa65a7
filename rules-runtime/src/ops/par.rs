//! Host loops over shadows, split over the threads of rayon's pool once they are large enough
//! to pay for it. One thread moves host memory at a fraction of what the host↔device link
//! carries, so the staged routes would otherwise be bound by the host (docs/performance.md).
//! Every loop is element-wise: the results do not depend on the split.

use crate::element::Differentiable;
use rayon::prelude::*;

/// Elements per task: large enough that a task's cost dwarfs its scheduling, small enough to
/// spread a few MiB over every thread.
const GRAIN: usize = 1 << 15;

/// Below this many elements a loop stays on the calling thread.
const SERIAL_BELOW: usize = 1 << 18;

/// `acc += src`, element-wise. Lengths are equal (checked by the callers).
pub(super) fn add<T: Differentiable>(acc: &mut [T], src: &[T]) {
    let serial = |a: &mut [T], s: &[T]| {
        for (a, s) in a.iter_mut().zip(s) {
            *a = T::add(*a, *s);
        }
    };
    if acc.len() < SERIAL_BELOW {
        serial(acc, src);
    } else {
        acc.par_chunks_mut(GRAIN)
            .zip(src.par_chunks(GRAIN))
            .for_each(|(a, s)| serial(a, s));
    }
}

/// `buf ← 0`.
pub(super) fn zero<T: Differentiable>(buf: &mut [T]) {
    if buf.len() < SERIAL_BELOW {
        buf.fill(T::zero());
    } else {
        buf.par_chunks_mut(GRAIN).for_each(|b| b.fill(T::zero()));
    }
}

/// `to ← from`. Lengths are equal (checked by the callers).
pub(super) fn copy<T: Differentiable>(to: &mut [T], from: &[T]) {
    if to.len() < SERIAL_BELOW {
        to.copy_from_slice(from);
    } else {
        to.par_chunks_mut(GRAIN)
            .zip(from.par_chunks(GRAIN))
            .for_each(|(t, f)| t.copy_from_slice(f));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_loops_match_the_serial_ones_at_every_size() {
        for n in [
            0,
            1,
            7,
            SERIAL_BELOW - 1,
            SERIAL_BELOW,
            SERIAL_BELOW + GRAIN + 3,
        ] {
            if cfg!(miri) && n > 1000 {
                continue; // the interpreter would take minutes over the parallel sizes
            }
            let src: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
            let mut acc: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
            let want: Vec<f32> = acc.iter().zip(&src).map(|(a, s)| a + s).collect();
            add(&mut acc, &src);
            assert_eq!(acc, want, "add, n = {n}");
            copy(&mut acc, &src);
            assert_eq!(acc, src, "copy, n = {n}");
            zero(&mut acc);
            assert!(acc.iter().all(|v| v.to_bits() == 0), "zero, n = {n}");
        }
    }
}
