//! What the region rules share (pitched copies, memsets, fills, and any rule with `restore`):
//! the boxes a call names, the check of a whole call before its first write, and the tape.
//!
//! A call is checked as a whole: every box against every buffer it lands on (the primals and
//! every lane's shadows, which have their primal's layout), how the boxes overlap row interval by
//! row interval, and where each lane's shadow work will run. Only then is anything written.

use crate::activity::{DstArg, DstPtr, SrcArg, SrcPtr};
use crate::element::Differentiable;
use crate::error::{Error, Result, check_len};
use crate::memory::raw::RawShadow;
use crate::memory::{MemoryKind, Overlap, Region, ShadowMemory, ShadowRead};
use crate::ops::{self, On, Op, SavedRegion};
use crate::region::{Pitched, Strides};
use core::marker::PhantomData;

/// Where a box starts in a CUDA array: `(x, y, z)` in elements, as `cuMemcpy3D`'s
/// `srcXInBytes / size_of::<T>()`, `srcY`, `srcZ` count it.
pub type Origin = (usize, usize, usize);

/// The boxes of a region rule's call, as the generated code names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boxes {
    /// The destination's box; `None`: the whole destination.
    pub dst: Option<Pitched>,
    /// The source's box; `None`: the whole source.
    pub src: Option<Pitched>,
    /// The source is a fill's value, a one-element buffer, not a box of the destination's shape.
    pub value: bool,
    /// The destination is a CUDA array and its box starts here: only the shape of `dst` counts,
    /// its offset and pitches are the array's own (resolved when the call is checked).
    pub dst_at: Option<Origin>,
    /// As `dst_at`, for the source.
    pub src_at: Option<Origin>,
}

impl Boxes {
    /// Whole buffers of equal lengths (a copy with `restore`, a memset or fill of a whole slice,
    /// a copy of a whole CUDA array: its box is the array's extent).
    pub const WHOLE: Boxes = Boxes {
        dst: None,
        src: None,
        value: false,
        dst_at: None,
        src_at: None,
    };

    /// Two boxes of one shape (a pitched copy).
    pub const fn copy(dst: Pitched, src: Pitched) -> Self {
        Boxes {
            dst: Some(dst),
            src: Some(src),
            ..Boxes::WHOLE
        }
    }

    /// One box of the destination (a memset or a fill).
    pub const fn dst(dst: Pitched) -> Self {
        Boxes {
            dst: Some(dst),
            ..Boxes::WHOLE
        }
    }

    /// A fill of `dst` (`None`: all of it) from a value held in a one-element buffer.
    pub const fn from_value(dst: Option<Pitched>) -> Self {
        Boxes {
            dst,
            value: true,
            ..Boxes::WHOLE
        }
    }

    /// The destination is a CUDA array, its box at `(x, y, z)` elements; the box given for it
    /// says only its shape (width, height, depth).
    pub const fn dst_in_array(mut self, x: usize, y: usize, z: usize) -> Self {
        self.dst_at = Some((x, y, z));
        self
    }

    /// The source is a CUDA array, its box at `(x, y, z)` elements; as [`Self::dst_in_array`].
    pub const fn src_in_array(mut self, x: usize, y: usize, z: usize) -> Self {
        self.src_at = Some((x, y, z));
        self
    }
}

/// The memory kinds and boxes of a raw-pointer region rule: each pointer is the base its box's
/// offset counts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRegion {
    /// Declared kind of `dst` (and of its shadows).
    pub dst_kind: MemoryKind,
    /// Declared kind of `src` (and of its shadows); unused without a source.
    pub src_kind: MemoryKind,
    /// The destination's box.
    pub dst: Pitched,
    /// The source's box, for copies.
    pub src: Option<Pitched>,
}

impl RawRegion {
    pub(crate) fn boxes(&self) -> Boxes {
        Boxes {
            dst: Some(self.dst),
            src: self.src,
            ..Boxes::WHOLE
        }
    }

    /// The destination's lanes as views just long enough for its box.
    ///
    /// # Safety
    /// Every pointer valid for its box in memory of the declared kind.
    pub(crate) unsafe fn dst_lanes<T: Differentiable, D: DstPtr<T>>(
        &self,
        dst: &D,
    ) -> Result<Raw<T>> {
        unsafe {
            Raw::new(
                self.dst_kind,
                self.dst,
                dst.primal(),
                |k| dst.lane(k),
                "dst",
            )
        }
    }

    /// The source's lanes, as [`Self::dst_lanes`].
    ///
    /// # Safety
    /// As [`Self::dst_lanes`].
    pub(crate) unsafe fn src_lanes<T: Differentiable, S: SrcPtr<T>>(
        &self,
        src: &S,
    ) -> Result<Raw<T>> {
        let r = self.src.unwrap_or(Pitched::linear::<T>(0, 0));
        let p = src.primal() as *mut T;
        unsafe { Raw::new(self.src_kind, r, p, |k| src.lane(k), "src") }
    }
}

/// One side of a call (`dst` or `src`): its primal and its lanes' shadows.
pub(crate) trait Side {
    /// The buffer type of the primal and of every shadow.
    type Buf: ShadowMemory + ?Sized;
    /// Lanes (0 for `Const`).
    fn width(&self) -> usize;
    fn primal(&self) -> &Self::Buf;
    fn lane(&self, k: usize) -> Option<&Self::Buf>;
    fn lane_mut(&mut self, k: usize) -> Option<&mut Self::Buf>;
}

/// A slice rule's destination as a [`Side`].
pub(crate) struct Dst<X: ?Sized, D>(pub(crate) D, PhantomData<fn(&X)>);
impl<X: ShadowMemory + ?Sized, D: DstArg<X>> Dst<X, D> {
    pub(crate) fn new(d: D) -> Self {
        Dst(d, PhantomData)
    }
    pub(crate) fn primal_mut(&mut self) -> &mut X {
        self.0.primal_mut()
    }
}
impl<X: ShadowMemory + ?Sized, D: DstArg<X>> Side for Dst<X, D> {
    type Buf = X;
    fn width(&self) -> usize {
        D::WIDTH
    }
    fn primal(&self) -> &X {
        self.0.primal()
    }
    fn lane(&self, k: usize) -> Option<&X> {
        self.0.lane(k)
    }
    fn lane_mut(&mut self, k: usize) -> Option<&mut X> {
        self.0.lane_mut(k)
    }
}

/// A slice rule's source as a [`Side`].
pub(crate) struct Src<Y: ?Sized, S>(pub(crate) S, PhantomData<fn(&Y)>);
impl<Y: ShadowMemory + ?Sized, S: SrcArg<Y>> Src<Y, S> {
    pub(crate) fn new(s: S) -> Self {
        Src(s, PhantomData)
    }
}
impl<Y: ShadowMemory + ?Sized, S: SrcArg<Y>> Side for Src<Y, S> {
    type Buf = Y;
    fn width(&self) -> usize {
        S::WIDTH
    }
    fn primal(&self) -> &Y {
        self.0.primal()
    }
    fn lane(&self, k: usize) -> Option<&Y> {
        self.0.lane(k)
    }
    fn lane_mut(&mut self, k: usize) -> Option<&mut Y> {
        self.0.lane_mut(k)
    }
}

/// A pointer rule's side: views from each pointer's base to the end of its box.
pub(crate) struct Raw<T> {
    pub(crate) primal: RawShadow<T>,
    lanes: Vec<RawShadow<T>>,
}

impl<T: Differentiable> Raw<T> {
    /// # Safety
    /// Every pointer valid for the box `r` in memory of kind `kind`.
    unsafe fn new(
        kind: MemoryKind,
        r: Pitched,
        primal: *mut T,
        lane: impl Fn(usize) -> Option<*mut T>,
        side: &'static str,
    ) -> Result<Self> {
        let len = r.check::<T>(side, usize::MAX)?.end;
        let (pw, sw) = match side {
            "dst" => ("the primal `dst`", "a shadow of `dst`"),
            _ => ("the primal `src`", "a shadow of `src`"),
        };
        // SAFETY: by the caller's contract, each pointer is valid for the box, which ends at `len`.
        let primal = unsafe { RawShadow::new(kind, primal, 0, len, pw)? };
        let mut lanes = Vec::new();
        while let Some(p) = lane(lanes.len()) {
            lanes.push(unsafe { RawShadow::new(kind, p, 0, len, sw)? });
        }
        Ok(Raw { primal, lanes })
    }
}

impl<T: Differentiable> Side for Raw<T> {
    type Buf = RawShadow<T>;
    fn width(&self) -> usize {
        self.lanes.len()
    }
    fn primal(&self) -> &RawShadow<T> {
        &self.primal
    }
    fn lane(&self, k: usize) -> Option<&RawShadow<T>> {
        self.lanes.get(k)
    }
    fn lane_mut(&mut self, k: usize) -> Option<&mut RawShadow<T>> {
        self.lanes.get_mut(k)
    }
}

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

/// A box placed on a buffer, for overlap checks.
struct Placed {
    what: String,
    /// The CUDA array the box is in (its handle), `None` for linear memory: boxes in different
    /// arrays, or in an array and linear memory, share nothing.
    array: Option<usize>,
    base: u64,
    r: Pitched,
    s: Strides,
}

impl Placed {
    fn bytes(&self, size: usize) -> (u64, u64) {
        let at = |e: usize| self.base + (e * size) as u64;
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
        if self.array != other.array {
            return Overlap::Disjoint;
        }
        let ((a0, a1), (b0, b1)) = (self.bytes(size), other.bytes(size));
        if self.r.elements() == 0 || other.r.elements() == 0 || a1 <= b0 || b1 <= a0 {
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
    what: String,
    buf: &B,
    r: Pitched,
    extent: Option<(usize, usize, usize)>,
) -> Result<Placed> {
    let s = r.check::<B::Elem>(&what, buf.len())?;
    let array = match buf.array() {
        Some(a) => {
            if let Some(e) = extent.filter(|&e| e != a.extent) {
                return Err(Error::BadRegion {
                    what,
                    why: format!(
                        "its CUDA array is {:?} (width, height, depth) but its primal's is {e:?}: \
                         a shadow has its primal's extent (`CudaArray::shadow_like`)",
                        a.extent
                    ),
                });
            }
            if r.elements() > 0 {
                ops::array::place(&a, &r, &what)?;
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
fn check_route<B: ShadowMemory + ?Sized>(on: On<'_>, what: &str, buf: &B) -> Result<()> {
    if let (On::Stream(s), Some(c)) = (on, buf.context())
        && c.cu_ctx() != s.context().cu_ctx()
    {
        return Err(Error::ContextMismatch {
            what: what.to_string(),
            expected: s.context().ordinal(),
            found: c.ordinal(),
        });
    }
    // An array is reached through boxes copied on a stream (its context was checked above).
    if buf.array().is_some() {
        return match on {
            On::Stream(_) => Ok(()),
            On::Host => Err(Error::NoStream(format!(
                "{what} is a CUDA array, whose shadow work is ordered on a stream"
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
    S: Side<Buf: ShadowRead<Elem = <D::Buf as ShadowRead>::Elem>>,
{
    type E<D> = <<D as Side>::Buf as ShadowRead>::Elem;
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
    let mut placed = vec![place("the primal `dst`".into(), dst.primal(), rd, None)?];
    if let Some(s) = src {
        placed.push(place("the primal `src`".into(), s.primal(), rs, None)?);
    }
    let mut lanes: Vec<[Option<usize>; 2]> = Vec::with_capacity(width);
    for k in 0..width {
        let mut ix = [None, None];
        if let Some(d) = dst.lane(k) {
            let what = format!("the shadow of `dst` (lane {k})");
            check_route(on, &what, d)?;
            ix[0] = Some(placed.len());
            placed.push(place(what, d, rd, dst_extent)?);
        }
        if let Some(s) = src.and_then(|s| s.lane(k)) {
            let what = format!("the shadow of `src` (lane {k})");
            check_route(on, &what, s)?;
            ix[1] = Some(placed.len());
            placed.push(place(what, s, rs, src_extent)?);
        }
        lanes.push(ix);
    }
    if restore {
        check_route(on, "the primal `dst`", dst.primal())?;
    }
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
                        format!("{} and {}", a.what, b.what),
                        r(a),
                        r(b),
                    ));
                }
                _ => {
                    let ((a0, a1), (b0, b1)) = (a.bytes(size), b.bytes(size));
                    return Err(Error::Aliasing {
                        what: b.what.clone(),
                        other: a.what.clone(),
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

/// FNV-1a over the primals' addresses and boxes: the tape's fingerprint of a call. Shadows are
/// left out: seeding a cotangent into a fresh buffer before the reverse is ordinary use.
fn fingerprint(primals: &[Placed], value: bool) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(u64::from(value));
    for p in primals {
        let r = p.r;
        for x in [
            p.array.map_or(0, |a| a as u64),
            p.base,
            r.offset as u64,
            r.width as u64,
            r.height as u64,
            r.depth as u64,
            r.pitch as u64,
            r.slice_height as u64,
        ] {
            eat(x);
        }
    }
    h
}

/// What the augmented primal of a region rule (or of any rule with `restore`) hands to its
/// reverse: the boxes, a fingerprint of the primals, and with `restore` the destination's old
/// contents, held in pooled memory until the tape is used or dropped.
#[derive(Debug)]
pub struct RegionTape<T> {
    dst: Pitched,
    src: Pitched,
    width: usize,
    primal_ran: bool,
    call: u64,
    saved: Option<SavedRegion<T>>,
}

impl<T> RegionTape<T> {
    pub(crate) fn new(c: &Checked, width: usize, primal_ran: bool) -> Self {
        RegionTape {
            dst: c.dst,
            src: c.src,
            width,
            primal_ran,
            call: c.call,
            saved: None,
        }
    }

    pub(crate) fn with_saved(mut self, saved: Option<SavedRegion<T>>) -> Self {
        self.saved = saved;
        self
    }

    /// The destination's box.
    pub fn dst_box(&self) -> Pitched {
        self.dst
    }
    /// The source's box (for a fill from a one-element buffer: that element; for a memset or a
    /// fill by value: the destination's box).
    pub fn src_box(&self) -> Pitched {
        self.src
    }
    /// Number of destination shadows (0 for a `Const` destination).
    pub fn width(&self) -> usize {
        self.width
    }
    /// Whether the primal ran (false when `dst` was `DuplicatedOnly`, or for a self-copy).
    pub fn primal_ran(&self) -> bool {
        self.primal_ran
    }
    /// Whether the reverse will write the destination's old contents back (`restore`).
    pub fn restores(&self) -> bool {
        self.saved.is_some()
    }

    /// Checks the tape against the reverse's own call; hands back what was saved.
    pub(crate) fn check(self, c: &Checked, width: usize) -> Result<Option<SavedRegion<T>>> {
        let found = (c.dst, c.src, width);
        let made = (self.dst, self.src, self.width);
        if made != found {
            return Err(Error::TapeMismatch(format!(
                "the tape was made for (dst box, src box, width) = {made:?}, \
                 but the reverse was called with {found:?}"
            )));
        }
        if self.call != c.call {
            return Err(Error::TapeMismatch(
                "the tape was made by a call on other primal buffers: \
                 give each reverse the tape of its own augmented primal"
                    .into(),
            ));
        }
        Ok(self.saved)
    }
}

#[cfg(test)]
mod tests {
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
