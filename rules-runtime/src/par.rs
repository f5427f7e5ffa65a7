//! Host loops over shadows, split over the threads of rayon's pool once they are large enough
//! to pay for it. One thread moves host memory at a fraction of what the host↔device link
//! carries, so the staged routes would otherwise be bound by the host (docs/performance-notes.md,
//! "Reverses through host memory").
//! Every loop is element-wise: the results do not depend on the split.

use crate::element::Differentiable;
use rayon::prelude::*;

/// Elements per task: large enough that a task's cost dwarfs its scheduling, small enough to
/// spread a few MiB over every thread.
const GRAIN: usize = 1 << 15;

/// Below this many elements a loop stays on the calling thread.
const SERIAL_BELOW: usize = 1 << 18;

/// `acc += src`, element-wise. Lengths are equal (checked by the callers).
pub(crate) fn add<T: Differentiable>(acc: &mut [T], src: &[T]) {
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
pub(crate) fn zero<T: Differentiable>(buf: &mut [T]) {
    if buf.len() < SERIAL_BELOW {
        buf.fill(T::zero());
    } else {
        buf.par_chunks_mut(GRAIN).for_each(|b| b.fill(T::zero()));
    }
}

/// `buf ← 0` in chunks of `per` elements, chunk `c` once `ready(c)` has returned: the host's share
/// of a pipeline whose device work completes chunk by chunk. One task per thread of the pool
/// zeroes its stripe of every chunk in turn, each waiting for the chunk itself, so the threads are
/// woken once per call and not once per chunk (what that costs: docs/performance-notes.md).
///
/// `ready(c)` returns once chunk `c` may be written; if it fails, it returns its error only after
/// making sure of that (e.g. by synchronising the stream). Every chunk is zeroed either way; the
/// first error is returned.
pub(crate) fn zero_behind<T, E>(
    buf: &mut [T],
    per: usize,
    ready: impl Fn(usize) -> Result<(), E> + Sync,
) -> Result<(), E>
where
    T: Differentiable,
    E: Send,
{
    if buf.len() < SERIAL_BELOW {
        let mut first = Ok(());
        for (c, chunk) in buf.chunks_mut(per.max(1)).enumerate() {
            if let Err(e) = ready(c) {
                first = first.and(Err(e));
            }
            chunk.fill(T::zero());
        }
        return first;
    }
    let threads = rayon::current_num_threads().max(1);
    let mut stripes: Vec<Vec<(usize, &mut [T])>> = (0..threads).map(|_| Vec::new()).collect();
    for (c, chunk) in buf.chunks_mut(per.max(1)).enumerate() {
        let len = chunk.len().div_ceil(threads);
        for (t, part) in chunk.chunks_mut(len).enumerate() {
            stripes[t].push((c, part));
        }
    }
    let first = std::sync::Mutex::new(None);
    rayon::scope(|sc| {
        for list in stripes {
            let (ready, first) = (&ready, &first);
            sc.spawn(move |_| {
                for (c, part) in list {
                    if let Err(e) = ready(c) {
                        let mut first = first.lock().unwrap_or_else(|p| p.into_inner());
                        first.get_or_insert(e);
                    }
                    part.fill(T::zero());
                }
            });
        }
    });
    match first.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `to ← from`. Lengths are equal (checked by the callers).
pub(crate) fn copy<T: Differentiable>(to: &mut [T], from: &[T]) {
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

    #[test]
    fn zero_behind_zeroes_every_chunk_after_it_is_ready_and_reports_the_first_error() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        for (n, per) in [
            (0, 4),
            (1, 4),
            (10, 3),
            (1000, 7),
            (SERIAL_BELOW + 5, GRAIN + 1),
        ] {
            if cfg!(miri) && n > 1000 {
                continue;
            }
            let mut buf = vec![1.5f32; n];
            let calls = AtomicUsize::new(0);
            let chunks = n.div_ceil(per);
            // Chunk 2 fails: it is zeroed all the same and its error comes back.
            let got = zero_behind(&mut buf, per, |c| {
                assert!(c < chunks, "chunk {c} of {chunks}");
                calls.fetch_add(1, Ordering::Relaxed);
                if c == 2 { Err(c) } else { Ok(()) }
            });
            assert!(buf.iter().all(|v| v.to_bits() == 0), "n = {n}, per = {per}");
            assert_eq!(got, if chunks > 2 { Err(2) } else { Ok(()) }, "n = {n}");
            assert!(
                calls.load(Ordering::Relaxed) >= chunks,
                "every chunk waited for"
            );
        }
    }
}
