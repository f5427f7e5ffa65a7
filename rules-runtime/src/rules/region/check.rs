//! The check of a whole region call before its first write: every box resolved (an array's
//! origin, a whole buffer's shape) and placed on every buffer it lands on, every pair of boxes
//! judged for overlap row interval by row interval, every lane's route checked, and the primals
//! fingerprinted for the tape.

use super::{Boxes, Origin, Side};
use crate::error::{Error, Result, check_len, check_len_with};
use crate::memory::{MemoryKind, Overlap, Region, ShadowRead};
use crate::ops::{self, On, Op};
use crate::region::{Pitched, Strides};

/// A call checked as a whole: its boxes resolved, how its primals and each lane's shadows relate.
pub(crate) struct Checked {
    /// The destination's box.
    pub(crate) dst: Pitched,
    /// The source's box (a fill's value: its one element).
    pub(crate) src: Pitched,
    /// The primals are the same box of the same memory (a self-copy).
    pub(crate) primal_same: bool,
    /// Per lane: its shadows are the same box of the same memory.
    pub(crate) lane_same: Vec<bool>,
    /// The fingerprint of the primals and boxes.
    pub(crate) call: u64,
}

/// The name of a buffer of a call in an error, made only for the error: a call that succeeds
/// formats no `String` (formatting the names would cost more than the checks).
#[derive(Clone, Copy, Debug)]
enum Name {
    /// A primal (`"the primal `dst`"`).
    Primal(&'static str),
    /// The shadow of argument `.0` in lane `.1`.
    Lane(&'static str, usize),
}

impl Name {
    fn text(self) -> String {
        match self {
            Name::Primal(s) => s.into(),
            Name::Lane(arg, k) => format!("the shadow of `{arg}` (lane {k})"),
        }
    }
}

/// A box placed on a buffer, for overlap checks.
struct Placed {
    what: Name,
    /// The CUDA array the box is in (its handle), `None` for linear memory: boxes in different
    /// arrays, or in an array and linear memory, share nothing.
    array: Option<usize>,
    base: u64,
    r: Pitched,
    s: Strides,
}

impl Placed {
    /// The bounding byte range. Saturating: an empty box may sit at any offset (it is never
    /// placed on memory), and a non-empty one was checked to lie in its buffer.
    fn bytes(&self, size: usize) -> (u64, u64) {
        let at = |e: usize| {
            self.base
                .saturating_add((e as u64).saturating_mul(size as u64))
        };
        (at(self.s.offset), at(self.s.end))
    }

    /// The byte intervals of its rows, in address order.
    fn rows(&self, size: usize) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        let w = (self.r.width * size) as u64;
        self.s.each_row(&self.r, |e| {
            let start = self.base + (e * size) as u64;
            v.push((start, start + w));
        });
        v
    }

    /// How two placed boxes relate, judged row interval by row interval.
    fn relation(&self, other: &Placed, size: usize) -> Overlap {
        if self.array != other.array || self.r.elements() == 0 || other.r.elements() == 0 {
            return Overlap::Disjoint;
        }
        let ((a0, a1), (b0, b1)) = (self.bytes(size), other.bytes(size));
        if a1 <= b0 || b1 <= a0 {
            return Overlap::Disjoint;
        }
        let same_rows = self.r.height <= 1 || self.s.row == other.s.row;
        let same_slices = self.r.depth <= 1 || self.s.slice == other.s.slice;
        if a0 == b0 && self.r.shape() == other.r.shape() && same_rows && same_slices {
            return Overlap::Same;
        }
        let (ra, rb) = (self.rows(size), other.rows(size));
        let (mut i, mut j) = (0, 0);
        while i < ra.len() && j < rb.len() {
            let ((x0, x1), (y0, y1)) = (ra[i], rb[j]);
            if x0 < y1 && y0 < x1 {
                return Overlap::Partial;
            }
            if x1 <= y1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        Overlap::Disjoint
    }
}

/// Places box `r` on `buf`. An array's box must also use the array's layout and fit its extent,
/// and a shadow array must have its primal's extent (`extent`), whose layout the box was made in.
fn place<B: ShadowRead + ?Sized>(
    what: Name,
    buf: &B,
    r: Pitched,
    extent: Option<(usize, usize, usize)>,
) -> Result<Placed> {
    // Named only if it fails (every error of `check` is a `BadRegion`).
    let s = r.check::<B::Elem>("", buf.len()).map_err(|e| match e {
        Error::BadRegion { why, .. } => Error::BadRegion {
            what: what.text(),
            why,
        },
        e => e,
    })?;
    let array = match buf.array() {
        Some(a) => {
            if let Some(e) = extent.filter(|&e| e != a.extent) {
                return Err(Error::BadRegion {
                    what: what.text(),
                    why: format!(
                        "its CUDA array is {:?} (width, height, depth) but its primal's is {e:?}: \
                         a shadow has its primal's extent (`CudaArray::shadow_like`)",
                        a.extent
                    ),
                });
            }
            if r.elements() > 0 {
                a.place(&r, &what.text())?;
            }
            Some(a.handle as usize)
        }
        None => None,
    };
    Ok(Placed {
        what,
        array,
        base: buf.region().start,
        r,
        s,
    })
}

/// The box at `at` of the CUDA array `buf`, of the shape of `shape` (the whole array if none), in
/// the array's layout: the box a rule's origin roles (`#[dst_x]`, ...) name.
fn array_box<B: ShadowRead + ?Sized>(
    what: &str,
    buf: &B,
    at: Origin,
    shape: Option<Pitched>,
) -> Result<Pitched> {
    let bad = |why: String| Error::BadRegion {
        what: what.to_string(),
        why,
    };
    let Some(a) = buf.array() else {
        return Err(bad(format!(
            "the rule places its box in a CUDA array (at {at:?}), but it is {:?} memory",
            buf.kind()
        )));
    };
    let (w, h, d) = a.extent;
    let (width, height, depth) = shape.map_or((w, h, d), |r| r.shape());
    let (x, y, z) = at;
    let fits = |o: usize, n: usize, m: usize| o.checked_add(n).is_some_and(|e| e <= m);
    if !(fits(x, width, w) && fits(y, height, h) && fits(z, depth, d)) {
        return Err(bad(format!(
            "the box at {at:?} of {width} × {height} × {depth} elements does not fit in the \
             array's {w} × {h} × {d}"
        )));
    }
    let size = size_of::<B::Elem>();
    // In the array (checked above), so no overflow: x + w·(y + h·z) < w·h·d.
    let offset = if width * height * depth == 0 {
        0
    } else {
        x + w * (y + h * z)
    };
    Ok(Pitched::slices(offset, width, height, depth, w * size, h))
}

/// The box of all of `buf`: an array's extent in its layout, or a run of its elements.
fn whole<B: ShadowRead + ?Sized>(buf: &B) -> Pitched {
    match buf.array() {
        Some(a) => {
            let (w, h, d) = a.extent;
            Pitched::slices(0, w, h, d, w * a.size, h)
        }
        None => Pitched::linear::<B::Elem>(0, buf.len()),
    }
}

/// A contiguous box of `shape`'s shape from element 0 (the linear side of a whole-array copy).
fn packed<T>(shape: Pitched) -> Pitched {
    let (w, h, d) = shape.shape();
    Pitched::slices(0, w, h, d, w * size_of::<T>(), h)
}

/// Checks that a shadow operation on `buf` can be routed on `on` (a stream for device memory,
/// the stream's context), without writing anything.
fn check_route<B: ShadowRead + ?Sized>(on: On<'_>, what: Name, buf: &B) -> Result<()> {
    if let (On::Stream(s), Some(c)) = (on, buf.context())
        && c.cu_ctx() != s.context().cu_ctx()
    {
        return Err(Error::ContextMismatch {
            what: what.text(),
            expected: s.context().ordinal(),
            found: c.ordinal(),
        });
    }
    // An array is reached through boxes copied on a stream (its context was checked above).
    if buf.array().is_some() {
        return match on {
            On::Stream(_) => Ok(()),
            On::Host => Err(Error::NoStream(format!(
                "{} is a CUDA array, whose shadow work is ordered on a stream",
                what.text()
            ))),
        };
    }
    ops::plan::<B, B>(on, Op::Zero, buf, None).map(drop)
}

/// Checks a whole call before anything is written: the boxes against every buffer, their
/// overlaps (the primals, and a lane's two shadows, may be the same box, never partly overlap;
/// no other two boxes may share a byte), the route of every lane's shadow work, and, with
/// `restore`, of the primal destination's save and restore.
pub(crate) fn check_call<D, S>(
    on: On<'_>,
    boxes: Boxes,
    dst: &D,
    src: Option<&S>,
    restore: bool,
) -> Result<Checked>
where
    D: Side,
    S: Side<Primal: ShadowRead<Elem = <D::Primal as ShadowRead>::Elem>>,
{
    type E<D> = <<D as Side>::Primal as ShadowRead>::Elem;
    let _p = crate::driver::probe::span("region check_call");
    let size = size_of::<E<D>>();
    // A whole CUDA array on either side gives a whole-buffer copy its shape.
    let whole_pair = !boxes.value && boxes.dst.is_none() && boxes.dst_at.is_none();
    let src_array = src.is_some_and(|s| s.primal().array().is_some());
    let rd = match (boxes.dst_at, boxes.dst, src) {
        (Some(at), r, _) => array_box("the primal `dst`", dst.primal(), at, r)?,
        (None, Some(r), _) => r,
        (None, None, Some(s)) if whole_pair => {
            check_len("the primal `dst`", s.primal().len(), dst.primal().len())?;
            match (dst.primal().array(), src_array) {
                (None, true) => packed::<E<D>>(whole(s.primal())),
                _ => whole(dst.primal()),
            }
        }
        (None, None, _) => whole(dst.primal()),
    };
    let rs = if boxes.value {
        if let Some(s) = src {
            check_len("the value buffer `src`", 1, s.primal().len())?;
        }
        Pitched::linear::<E<D>>(0, 1)
    } else {
        match (boxes.src_at, boxes.src, src) {
            (Some(at), r, Some(s)) => array_box("the primal `src`", s.primal(), at, r)?,
            (_, Some(r), _) => r,
            (_, None, Some(s)) if src_array => whole(s.primal()),
            (_, None, Some(_)) if whole_pair && dst.primal().array().is_some() => {
                packed::<E<D>>(rd)
            }
            (_, None, Some(s)) => Pitched::linear::<E<D>>(0, s.primal().len()),
            (_, None, None) => rd,
        }
    };
    if src.is_some() && !boxes.value && rd.shape() != rs.shape() {
        return Err(Error::BadRegion {
            what: "the source".into(),
            why: format!(
                "its box is {:?} (width, height, depth) but the destination's is {:?}",
                rs.shape(),
                rd.shape()
            ),
        });
    }
    let width = dst.width().max(src.map_or(0, Side::width));
    let dst_extent = dst.primal().array().map(|a| a.extent);
    let src_extent = src.and_then(|s| s.primal().array()).map(|a| a.extent);
    // Sized once: the primals and two shadows per lane.
    let mut placed = Vec::with_capacity(2 + 2 * width);
    placed.push(place(
        Name::Primal("the primal `dst`"),
        dst.primal(),
        rd,
        None,
    )?);
    if let Some(s) = src {
        placed.push(place(
            Name::Primal("the primal `src`"),
            s.primal(),
            rs,
            None,
        )?);
    }
    let lanes_p = crate::driver::probe::span("region check_call: lanes (names, routes, pairs)");
    let mut lanes: Vec<[Option<usize>; 2]> = Vec::with_capacity(width);
    // A shadow has its primal's layout, hence its length: one set of length rules for every rule
    // kind (a plain `copy` refuses the same shadows), checked for every lane before any write.
    let dst_len = dst.primal().len();
    let src_len = src.map(|s| s.primal().len());
    for k in 0..width {
        let mut ix = [None, None];
        if let Some(d) = dst.lane(k) {
            let what = Name::Lane("dst", k);
            check_len_with(|| what.text(), dst_len, d.len())?;
            check_route(on, what, d)?;
            ix[0] = Some(placed.len());
            placed.push(place(what, d, rd, dst_extent)?);
        }
        if let (Some(s), Some(len)) = (src.and_then(|s| s.lane(k)), src_len) {
            let what = Name::Lane("src", k);
            check_len_with(|| what.text(), len, s.len())?;
            check_route(on, what, s)?;
            // The reverse's work between the lane's two shadows: a route must exist for the pair
            // too (not only for each), or a later lane could fail after an earlier one ran.
            if let Some(d) = dst.lane(k) {
                ops::region::check_pair(on, s, d)?;
            }
            ix[1] = Some(placed.len());
            placed.push(place(what, s, rs, src_extent)?);
        }
        lanes.push(ix);
    }
    drop(lanes_p);
    if restore {
        check_route(on, Name::Primal("the primal `dst`"), dst.primal())?;
    }
    // What a graph capture cannot record, refused before anything runs (the primal included).
    let mut arrays = false;
    let mut host = false;
    let mut kind = |k: MemoryKind| match k {
        MemoryKind::Array => arrays = true,
        MemoryKind::Host => host = true,
        _ => {}
    };
    kind(dst.primal().kind());
    if let Some(s) = src {
        kind(s.primal().kind());
    }
    for k in 0..width {
        if let Some(d) = dst.lane(k) {
            kind(d.kind());
        }
        if let Some(s) = src.and_then(|s| s.lane(k)) {
            kind(s.kind());
        }
    }
    let what = match (restore, arrays) {
        (true, _) => "a rule with `restore`",
        (false, true) => "CUDA array staging",
        (false, false) => "a region rule on pageable host memory",
    };
    let home = dst
        .primal()
        .home_stream()
        .or(src.and_then(|s| s.primal().home_stream()));
    ops::refuse_call_in_capture(on, home.map(|s| &**s), what, restore || arrays || host)?;
    // Pairs that may be the same box: the primals, and each lane's two shadows (a self-copy).
    let may_be_same = |i: usize, j: usize| {
        !boxes.value
            && ((i, j) == (0, 1) && src.is_some() || lanes.iter().any(|l| l == &[Some(i), Some(j)]))
    };
    let mut primal_same = false;
    let mut lane_same = vec![false; width];
    for j in 0..placed.len() {
        for i in 0..j {
            let (a, b) = (&placed[i], &placed[j]);
            match a.relation(b, size) {
                Overlap::Disjoint => {}
                Overlap::Same if may_be_same(i, j) => {
                    if i == 0 {
                        primal_same = true;
                    } else if let Some(k) = lanes.iter().position(|l| l[0] == Some(i)) {
                        lane_same[k] = true;
                    }
                }
                Overlap::Partial if may_be_same(i, j) => {
                    let r = |p: &Placed| {
                        let (start, end) = p.bytes(size);
                        Region { start, end }
                    };
                    return Err(Error::partial_overlap(
                        format!("{} and {}", a.what.text(), b.what.text()),
                        r(a),
                        r(b),
                    ));
                }
                _ => {
                    let ((a0, a1), (b0, b1)) = (a.bytes(size), b.bytes(size));
                    return Err(Error::Aliasing {
                        what: b.what.text(),
                        other: a.what.text(),
                        start: a0.max(b0),
                        end: a1.min(b1),
                    });
                }
            }
        }
    }
    let call = fingerprint(&placed[..1 + usize::from(src.is_some())], boxes.value);
    Ok(Checked {
        dst: rd,
        src: rs,
        primal_same,
        lane_same,
        call,
    })
}

/// The primals' addresses and boxes, hashed ([`crate::rules::fingerprint`]): the tape's
/// fingerprint of a call. Shadows are left out: seeding a cotangent into a fresh buffer before the
/// reverse is ordinary use.
fn fingerprint(primals: &[Placed], value: bool) -> u64 {
    let words = primals.iter().flat_map(|p| {
        let r = p.r;
        [
            p.array.map_or(0, |a| a as u64),
            p.base,
            r.offset as u64,
            r.width as u64,
            r.height as u64,
            r.depth as u64,
            r.pitch as u64,
            r.slice_height as u64,
        ]
    });
    crate::rules::fingerprint(core::iter::once(u64::from(value)).chain(words))
}

#[cfg(test)]
mod tests {
    use super::super::{Dst, Src};
    use super::*;
    use crate::activity::Const;

    /// An origin names a box in a CUDA array: on linear memory it is refused before any write.
    #[test]
    fn an_array_origin_on_linear_memory_is_a_bad_region() {
        let (mut d, s) = (vec![0f32; 8], vec![0f32; 8]);
        let (dst, src) = (Dst::new(Const(&mut d[..])), Src::new(Const(&s[..])));
        let run = Pitched::linear::<f32>(0, 4);
        for boxes in [
            Boxes::copy(run, run).dst_in_array(0, 0, 0),
            Boxes::copy(run, run).src_in_array(1, 0, 0),
        ] {
            let e = check_call(On::Host, boxes, &dst, Some(&src), false).map(|c| c.dst);
            assert!(matches!(e, Err(Error::BadRegion { .. })), "{e:?}");
        }
    }
}
