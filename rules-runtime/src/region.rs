//! Regions of a buffer: a box of `depth` slices of `height` rows of `width` elements, the rows
//! `pitch` bytes apart and the slices `slice_height` rows apart, as `cuMemcpy2D` / `cuMemcpy3D`
//! and `cuMemsetD2D*` describe them. The region rules (pitched copies, memsets, fills) and their
//! shadow operations (`ops::region`) work on such a box and never touch the bytes
//! between its rows (padding) or outside it.

use crate::address::Overlap;
use crate::error::{Error, Result};

/// A box of elements inside a buffer.
///
/// `offset` is in elements from the start of the buffer; `pitch` is in bytes (the distance
/// between the starts of two rows, as the driver's pitched copies count it); `slice_height` is
/// in rows (the distance between the starts of two slices, `cuMemcpy3D`'s `Height`). A plain run
/// of `n` elements is [`Pitched::linear`].
///
/// A box is checked against a buffer and an element type before anything is written: the pitch
/// must be a multiple of the element size and hold a row, the slice height must hold the rows,
/// and the last element must lie inside the buffer; otherwise [`Error::BadRegion`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pitched {
    /// First element of the box, in elements from the start of the buffer.
    pub offset: usize,
    /// Elements per row.
    pub width: usize,
    /// Rows per slice.
    pub height: usize,
    /// Slices.
    pub depth: usize,
    /// Bytes from the start of one row to the start of the next.
    pub pitch: usize,
    /// Rows from the start of one slice to the start of the next (at least `height`).
    pub slice_height: usize,
}

impl Pitched {
    /// `len` consecutive elements of `T` from element `offset`: one row.
    pub const fn linear<T>(offset: usize, len: usize) -> Self {
        let row = len.saturating_mul(size_of::<T>());
        Pitched {
            offset,
            width: len,
            height: 1,
            depth: 1,
            pitch: row,
            slice_height: 1,
        }
    }

    /// `height` rows of `width` elements, `pitch` bytes apart, from element `offset` (a 2D box).
    pub const fn rows(offset: usize, width: usize, height: usize, pitch: usize) -> Self {
        Pitched {
            offset,
            width,
            height,
            depth: 1,
            pitch,
            slice_height: height,
        }
    }

    /// `depth` slices of `height` rows of `width` elements, rows `pitch` bytes apart and slices
    /// `slice_height` rows apart, from element `offset` (a 3D box).
    pub const fn slices(
        offset: usize,
        width: usize,
        height: usize,
        depth: usize,
        pitch: usize,
        slice_height: usize,
    ) -> Self {
        Pitched {
            offset,
            width,
            height,
            depth,
            pitch,
            slice_height,
        }
    }

    /// The number of elements in the box.
    pub fn elements(&self) -> usize {
        self.width
            .saturating_mul(self.height)
            .saturating_mul(self.depth)
    }

    /// The shape (width, height, depth).
    pub fn shape(&self) -> (usize, usize, usize) {
        (self.width, self.height, self.depth)
    }

    /// Checks the box against a buffer of `len` elements of `T` (`what` names it in errors) and
    /// gives its strides in elements.
    pub(crate) fn check<T>(&self, what: &str, len: usize) -> Result<Strides> {
        let size = size_of::<T>();
        let bad = |why: String| Error::BadRegion {
            what: what.to_string(),
            why,
        };
        // An empty box reads and writes nothing, but a primitive may still step its pointers to
        // the box's offset and to each row's start: they must lie in the buffer (at most one past
        // its end), as a copy of no elements must start in its buffer. A box with no row is its
        // offset; one of width 0 has its rows checked below like any box's.
        if self.height == 0 || self.depth == 0 {
            if self.offset > len {
                return Err(bad(format!(
                    "the box starts at element {} but the buffer holds {len}",
                    self.offset
                )));
            }
            return Ok(Strides {
                offset: self.offset,
                row: 0,
                slice: 0,
                end: self.offset,
            });
        }
        if self.height > 1 || self.depth > 1 {
            if !self.pitch.is_multiple_of(size) {
                return Err(bad(format!(
                    "the pitch ({} bytes) is not a multiple of the element size ({size} bytes)",
                    self.pitch
                )));
            }
            let row_bytes = self.width.saturating_mul(size);
            if row_bytes > self.pitch {
                return Err(bad(format!(
                    "a row of {} elements ({row_bytes} bytes) is longer than the pitch ({} bytes)",
                    self.width, self.pitch
                )));
            }
        }
        if self.depth > 1 && self.slice_height < self.height {
            return Err(bad(format!(
                "the slice height ({} rows) is smaller than the height ({} rows)",
                self.slice_height, self.height
            )));
        }
        let row = if self.height > 1 || self.depth > 1 {
            self.pitch / size
        } else {
            self.width
        };
        let slice = if self.depth > 1 {
            row.checked_mul(self.slice_height)
        } else {
            Some(row.saturating_mul(self.height))
        };
        // One past the last element: offset + (depth-1)·slice + (height-1)·row + width.
        let end = slice.and_then(|slice| {
            let last_slice = (self.depth - 1).checked_mul(slice)?;
            let last_row = (self.height - 1).checked_mul(row)?;
            self.offset
                .checked_add(last_slice)?
                .checked_add(last_row)?
                .checked_add(self.width)
        });
        match (slice, end) {
            (Some(slice), Some(end)) if end <= len => Ok(Strides {
                offset: self.offset,
                row,
                slice,
                // A width-0 box ends where it starts (nothing of it is touched).
                end: if self.width == 0 { self.offset } else { end },
            }),
            (_, end) => Err(bad(format!(
                "the box reaches element {} but the buffer holds {len}",
                end.map_or_else(|| "beyond usize::MAX".to_string(), |e| e.to_string())
            ))),
        }
    }
}

/// A checked box in elements: where each row starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Strides {
    /// First element.
    pub(crate) offset: usize,
    /// Elements from one row to the next.
    pub(crate) row: usize,
    /// Elements from one slice to the next.
    pub(crate) slice: usize,
    /// One past the last element of the box (`offset` for an empty box).
    pub(crate) end: usize,
}

impl Strides {
    /// The first element of row `y` of slice `z`.
    pub(crate) fn row_start(&self, y: usize, z: usize) -> usize {
        self.offset + z * self.slice + y * self.row
    }

    /// Calls `f(start)` with the first element of every row, slice by slice, in address order.
    pub(crate) fn each_row(&self, shape: &Pitched, mut f: impl FnMut(usize)) {
        if shape.elements() == 0 {
            return;
        }
        for z in 0..shape.depth {
            for y in 0..shape.height {
                f(self.row_start(y, z));
            }
        }
    }
}

/// How two checked boxes of the same shape relate, judged row interval by row interval (not on
/// their bounding ranges): `base_a` and `base_b` are the byte addresses of their buffers' first
/// elements, `size` the element size. The same start and strides are [`Overlap::Same`] (a
/// self-copy); any shared byte otherwise is [`Overlap::Partial`].
pub(crate) fn relation(
    shape: &Pitched,
    size: usize,
    (base_a, a): (u64, Strides),
    (base_b, b): (u64, Strides),
) -> Overlap {
    if shape.elements() == 0 {
        return Overlap::Disjoint;
    }
    let bytes = |base: u64, e: usize| base + (e * size) as u64;
    let (a_lo, a_hi) = (bytes(base_a, a.offset), bytes(base_a, a.end));
    let (b_lo, b_hi) = (bytes(base_b, b.offset), bytes(base_b, b.end));
    if a_hi <= b_lo || b_hi <= a_lo {
        return Overlap::Disjoint;
    }
    let same_rows = shape.height <= 1 || a.row == b.row;
    let same_slices = shape.depth <= 1 || a.slice == b.slice;
    if a_lo == b_lo && same_rows && same_slices {
        return Overlap::Same;
    }
    // The rows of each box are disjoint and in increasing address order (a row fits in its
    // pitch, the rows of a slice in its slice height): merge the two sorted lists of intervals.
    let row_bytes = (shape.width * size) as u64;
    let rows = |base: u64, s: Strides| {
        let mut v = Vec::with_capacity(shape.height * shape.depth);
        s.each_row(shape, |e| v.push(bytes(base, e)));
        v
    };
    let (ra, rb) = (rows(base_a, a), rows(base_b, b));
    let (mut i, mut j) = (0, 0);
    while i < ra.len() && j < rb.len() {
        let (x, y) = (ra[i], rb[j]);
        if x < y + row_bytes && y < x + row_bytes {
            return Overlap::Partial;
        }
        if x < y {
            i += 1;
        } else {
            j += 1;
        }
    }
    Overlap::Disjoint
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_the_fault() {
        let r = Pitched::rows(0, 4, 3, 18);
        let e = r.check::<f32>("dst", 100).unwrap_err();
        assert!(e.to_string().contains("not a multiple"), "{e}");
        let e = Pitched::rows(0, 5, 3, 16)
            .check::<f32>("dst", 100)
            .unwrap_err();
        assert!(e.to_string().contains("longer than the pitch"), "{e}");
        let e = Pitched::rows(1, 4, 3, 16)
            .check::<f32>("dst", 12)
            .unwrap_err();
        assert!(e.to_string().contains("reaches element 13"), "{e}");
        let e = Pitched::slices(0, 2, 3, 2, 8, 2)
            .check::<f32>("dst", 100)
            .unwrap_err();
        assert!(e.to_string().contains("slice height"), "{e}");
        let e = Pitched::rows(usize::MAX - 2, 4, 3, 16)
            .check::<f32>("dst", 12)
            .unwrap_err();
        assert!(e.to_string().contains("beyond"), "{e}");
    }

    #[test]
    fn strides_and_extent() {
        let s = Pitched::slices(3, 2, 3, 2, 20, 4)
            .check::<f32>("x", 1000)
            .unwrap();
        assert_eq!((s.row, s.slice), (5, 20));
        // last element: 3 + 20 + 2·5 + 1 = 34, so end = 35.
        assert_eq!(s.end, 35);
        let s = Pitched::linear::<f64>(2, 5).check::<f64>("x", 7).unwrap();
        assert_eq!((s.offset, s.end), (2, 7));
        assert!(Pitched::linear::<f64>(3, 5).check::<f64>("x", 7).is_err());
        // An empty box covers nothing, but its offset and row starts lie in the buffer (at most
        // one past its end), where a primitive may step its pointers (a width-0 box at element 50
        // of 4 would reach a primitive's pointer arithmetic: out of bounds).
        let s = Pitched::rows(4, 0, 1, 16).check::<f32>("x", 4).unwrap();
        assert_eq!(s.end, s.offset);
        let s = Pitched::rows(0, 0, 2, 16).check::<f32>("x", 4).unwrap();
        assert_eq!((s.offset, s.end), (0, 0));
        for (offset, height) in [(50, 3), (5, 0), (0, 3)] {
            let e = Pitched::rows(offset, 0, height, 16).check::<f32>("x", 4);
            assert!(
                matches!(e, Err(Error::BadRegion { .. })),
                "{offset}, {height}: {e:?}"
            );
        }
        let e = Pitched::slices(2, 2, 2, 0, 8, 2)
            .check::<f32>("x", 1)
            .unwrap_err();
        assert!(e.to_string().contains("starts at element 2"), "{e}");
    }

    #[test]
    fn overlap_is_judged_per_row() {
        // Two interleaved boxes in one buffer: rows of 2 floats every 16 bytes, one starting at
        // element 0 and one at element 2: their bounding ranges overlap, their rows do not.
        let shape = Pitched::rows(0, 2, 4, 16);
        let a = shape.check::<f32>("a", 64).unwrap();
        let b = Pitched { offset: 2, ..shape }
            .check::<f32>("b", 64)
            .unwrap();
        assert_eq!(relation(&shape, 4, (0, a), (0, b)), Overlap::Disjoint);
        assert_eq!(relation(&shape, 4, (0, a), (0, a)), Overlap::Same);
        let c = Pitched { offset: 1, ..shape }
            .check::<f32>("c", 64)
            .unwrap();
        assert_eq!(relation(&shape, 4, (0, a), (0, c)), Overlap::Partial);
        // The same start with other pitches shares the first row, so it is not a self-copy.
        let wide = Pitched::rows(0, 2, 4, 32);
        let d = wide.check::<f32>("d", 64).unwrap();
        assert_eq!(relation(&shape, 4, (0, a), (0, d)), Overlap::Partial);
        // Other buffers.
        assert_eq!(relation(&shape, 4, (0, a), (4096, a)), Overlap::Disjoint);
    }
}
