//! The array bridges (`arrays/`) against misuse from safe code and from what Enzyme passes: no
//! bridge runs inside another (the re-entrance guard), a panic releases the guard, refusals run
//! nothing, a handle keeps its array's extent. Each test asserts the promise; a "Hazard" note says
//! what would happen without the guard. GPU tests: `--ignored array_misuse_gpu`.

use super::arrays::rules::{AdRefRule, DstAct, SrcAct};
use super::*;
use crate::autodiff::{AdArray, AdArrayPair, take_error};
use crate::error::Result;
use crate::memory::ShadowMemory;
use crate::memory::array::CudaArray;
use crate::memory::raw::RawShadow;
use cudarc::driver::CudaStream;
use std::cell::Cell;

fn error_text() -> String {
    take_error()
        .map(|(e, n)| format!("{n}: {e}"))
        .unwrap_or_default()
}

/// A host pointer copy, bridged: what a rule's primitive may call from inside another bridge.
#[rules_macro::derivative_rule(copy, dst = host, src = host, crate = crate, autodiff)]
unsafe fn am_copy(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// An array rule's object over (`RawShadow`, `[f32]`), as `RefRegion` drives a generated one:
/// copies `src` into `dst` on the host, then runs `inner` (the primitive's own code).
struct Probe<F: FnMut()>(F);

fn sides<'a, 'b>(
    dst: DstAct<'a, RawShadow<f32>>,
    src: Option<SrcAct<'b, [f32]>>,
) -> (&'a mut RawShadow<f32>, &'b [f32]) {
    let d = match dst {
        DstAct::Dup(d, _) | DstAct::Const(d) => d,
    };
    let s = match src.expect("a copy") {
        SrcAct::Dup(s, _) | SrcAct::Const(s) => s,
    };
    (d, s)
}

impl<'h, F: FnMut()> AdRefRule<'h, RawShadow<f32>, [f32]> for Probe<F> {
    type Tape = ();
    const SOURCE: bool = true;
    fn fwd(
        &mut self,
        dst: DstAct<'_, RawShadow<f32>>,
        src: Option<SrcAct<'_, [f32]>>,
    ) -> Result<()> {
        let (d, s) = sides(dst, src);
        let out = d.host_mut()?.expect("host memory");
        out.copy_from_slice(s);
        (self.0)();
        out[0] += 0.0; // the primitive's `&mut` is used after the inner call
        Ok(())
    }
    fn aug(
        &mut self,
        dst: DstAct<'_, RawShadow<f32>>,
        src: Option<SrcAct<'_, [f32]>>,
    ) -> Result<()> {
        self.fwd(dst, src)
    }
    fn rev(
        &mut self,
        (): (),
        _: DstAct<'_, RawShadow<f32>>,
        _: Option<SrcAct<'_, [f32]>>,
    ) -> Result<()> {
        (self.0)();
        Ok(())
    }
}

/// The array bridges' primal over a host `AdBuf` destination and a slice source, with `inner`
/// run inside the rule (what `array_primal` does for a generated rule, minus the array, which
/// needs a GPU).
fn outer_primal(y: &mut [f32], x: &mut [f32], inner: impl FnMut()) {
    let mut dy = vec![0.0f32; y.len()];
    let mut pair = AdPair::new_host(y, &mut dy).unwrap();
    let (hy, _) = pair.split();
    let h: *const AdBuf<f32> = hy;
    let (xp, n) = (x.as_mut_ptr(), x.len());
    // SAFETY: a live handle (its shadow slot holding it: inactive) and a live slice.
    unsafe {
        array_primal(
            "am_outer",
            |_| Ok(Probe(inner)),
            BufSide(h, h),
            Some(SliceSide(xp, n, xp)),
        )
    }
}

/// Hazard (guarded by: the re-entrance guard is taken by every bridge, pointer and
/// fill bridges included). The guard `Entered` was taken by the array bridges only, so a rule's
/// primitive inside an array bridge could call a pointer rule's `_ad` (and a pointer primitive an
/// array one). With a pinned or unified `AdBuf` passed to the primitive as an extra `&AdBuf`
/// argument, the inner bridge reads (through its own `RawShadow`) the memory the outer rule holds
/// as `&mut [T]` (`RawShadow::host_mut`): `array_misuse_gpu_a_pointer_bridge_inside_an_array_bridge`.
/// Host memory cannot show it (a host pointer rule takes slices, which safe code cannot alias),
/// so here the promise itself: a bridge inside a bridge is refused, nothing changed.
#[test]
fn array_misuse_a_pointer_bridge_inside_an_array_bridge_is_refused() {
    let _ = take_error();
    let (mut y, mut x) = (vec![0.0f32; 3], vec![1.0f32, 2.0, 3.0]);
    let (mut a, b) = (vec![0.0f32; 2], vec![7.0f32; 2]);
    outer_primal(&mut y, &mut x, || am_copy_ad(&mut a, &b, 2));
    let e = error_text();
    assert!(
        e.contains("inside another bridge"),
        "nested bridge ran: {e:?}"
    );
    assert_eq!(a, [0.0; 2], "the refused inner copy changed nothing");
    assert_eq!(y, [1.0, 2.0, 3.0], "the outer copy ran");
}

/// Held: an array bridge inside an array bridge is refused (the guard had no test).
#[test]
fn array_misuse_an_array_bridge_inside_an_array_bridge_is_refused() {
    let _ = take_error();
    let (mut y, mut x) = (vec![0.0f32; 2], vec![1.0f32, 2.0]);
    let (mut y2, mut x2) = (vec![0.0f32; 2], vec![5.0f32; 2]);
    outer_primal(&mut y, &mut x, || outer_primal(&mut y2, &mut x2, || {}));
    let e = error_text();
    assert!(e.contains("inside another bridge"), "{e:?}");
    assert_eq!(y2, [0.0; 2]);
    assert_eq!(y, [1.0, 2.0]);
}

/// Held: a panicking primitive is caught at the edge, and the guard is released (a later bridge
/// on the thread runs).
#[test]
fn array_misuse_a_panic_inside_an_array_bridge_releases_the_guard() {
    let _ = take_error();
    let (mut y, mut x) = (vec![0.0f32; 2], vec![1.0f32, 2.0]);
    outer_primal(&mut y, &mut x, || panic!("primitive failed"));
    assert!(error_text().contains("panic: primitive failed"));
    let (mut a, b) = (vec![0.0f32; 2], vec![7.0f32; 2]);
    am_copy_ad(&mut a, &b, 2);
    assert_eq!(error_text(), "");
    assert_eq!(a, [7.0; 2]);
}

/// Held: the checks before the rule (Enzyme's arguments): an inactive destination with an active
/// source, a swapped shadow handle, a shadow handle in the primal slot, a null tape, activity
/// changed between the augmented primal and the reverse. Each is an error, the rule never runs.
#[test]
fn array_misuse_array_bridge_refusals_run_nothing() {
    let _ = take_error();
    let ran = Cell::new(0);
    let (mut y, mut dy) = (vec![0.0f32; 2], vec![0.0f32; 2]);
    let (mut z, mut dz) = (vec![0.0f32; 2], vec![0.0f32; 2]);
    let (mut x, mut dx) = (vec![1.0f32, 2.0], vec![3.0f32, 4.0]);
    let mut py = AdPair::new_host(&mut y, &mut dy).unwrap();
    let mut pz = AdPair::new_host(&mut z, &mut dz).unwrap();
    core::mem::swap(py.split().1, pz.split().1); // py's slot now holds z's shadow
    let (hy, sy) = py.split();
    let (hy, sy): (*const AdBuf<f32>, *const AdBuf<f32>) = (hy, &*sy);
    let (mut w, mut dw) = (vec![0.0f32; 2], vec![0.0f32; 2]);
    let mut pw = AdPair::new_host(&mut w, &mut dw).unwrap();
    let (hw, sw) = pw.split();
    let (hw, sw): (*const AdBuf<f32>, *const AdBuf<f32>) = (hw, &*sw);
    let (xp, dxp) = (x.as_mut_ptr(), dx.as_mut_ptr());
    let make = |_| Ok(Probe(|| ran.set(ran.get() + 1)));
    type Case<'a> = (&'static str, Box<dyn Fn() + 'a>);
    let cases: [Case<'_>; 5] = [
        // SAFETY (each): live handles and slices of 2 elements.
        (
            "dst inactive, src active",
            Box::new(|| unsafe {
                array_fwd("c", make, BufSide(hy, hy), Some(SliceSide(xp, 2, dxp)))
            }),
        ),
        (
            "swapped shadow",
            Box::new(|| unsafe {
                array_fwd("c", make, BufSide(hy, sy), Some(SliceSide(xp, 2, xp)))
            }),
        ),
        (
            "shadow as primal",
            Box::new(|| unsafe {
                array_fwd("c", make, BufSide(sy, sy), Some(SliceSide(xp, 2, xp)))
            }),
        ),
        (
            "null tape",
            Box::new(|| unsafe {
                array_rev("c", make, BufSide(hy, hy), Some(SliceSide(xp, 2, xp)), None)
            }),
        ),
        (
            "activity changed",
            Box::new(|| unsafe {
                let t = array_aug("c", make, BufSide(hw, sw), Some(SliceSide(xp, 2, xp)));
                assert!(t.is_some());
                ran.set(ran.get() - 1);
                array_rev("c", make, BufSide(hw, sw), Some(SliceSide(xp, 2, dxp)), t)
            }),
        ),
    ];
    let want = [
        "inactive",
        "not this buffer's shadow",
        "expected a primal handle",
        "no tape",
        "disagree",
    ];
    for ((name, case), want) in cases.iter().zip(want) {
        case();
        let e = error_text();
        assert!(e.contains(want), "{name}: {e:?}");
    }
    assert_eq!(ran.get(), 0, "a refused call reached the rule");
    assert_eq!(x, [1.0, 2.0]);
    assert_eq!(dx, [3.0, 4.0]);
}

// ---- GPU ----

/// The GPU's stream. These tests are `#[ignore]`d, so a machine without a GPU reports them as
/// ignored; run with `--ignored`, a missing GPU is a failure, not a pass (docs/testing.md).
fn gpu() -> std::sync::Arc<CudaStream> {
    crate::driver::stream(0).expect("a GPU (this test was asked for with --ignored)")
}

/// Hazard (guarded by: a handle keeps its array's extent, `extent` reads no array).
/// `split` hands out the shadow handle as `&mut AdArray`, and `AdArray` has no lifetime: a
/// `mem::swap` moves it into a pair that outlives the arrays it points at, and
/// `AdArray::extent` then reads a freed `CudaArray` (a use after free from safe code). Here the
/// freed box is reused by a new array of another extent, which the handle then reports.
#[test]
#[ignore = "needs a GPU"]
fn array_misuse_gpu_a_swapped_array_shadow_handle_reads_a_freed_array() {
    let s = gpu();
    let new = |w| Box::new(CudaArray::<f32>::new(s.context(), w, 1, 1).unwrap());
    let (mut a, mut da) = (new(4), new(4));
    let mut pa = AdArrayPair::new(&mut a, &mut da, &s).unwrap();
    {
        let (mut b, mut db) = (new(8), new(8));
        let mut pb = AdArrayPair::new(&mut b, &mut db, &s).unwrap();
        core::mem::swap(pa.split().1, pb.split().1);
    } // b and db freed; pa's slot holds db's handle
    let reuse = (new(16), new(16));
    let seen = pa.split().1.extent();
    drop(reuse);
    assert_eq!(seen, (8, 1, 1), "the handle read another array's memory");
}

/// The outer rule: an array's whole contents into a `RawShadow` (pinned here), then the
/// primitive reads `ctx`'s memory through a pointer rule's bridge while it holds its destination
/// as `&mut [f32]`.
#[rules_macro::derivative_rule(copy, crate = crate, autodiff)]
fn am_download_peek(
    stream: &std::sync::Arc<CudaStream>,
    #[dst] dst: &mut RawShadow<f32>,
    #[src] src: &CudaArray<f32>,
    // `#[inert]`, the only form the attribute accepts for it: the run-time refusal is tested.
    #[inert] ctx: &AdBuf<f32>,
) -> Result<()> {
    let (w, h, d) = src.extent();
    crate::memory::linear::array_to_linear(stream, dst, (w * 4, h), src, (0, 0, 0), (w, h, d))?;
    stream.synchronize().map_err(crate::error::Error::primal)?;
    let mine = dst.host_mut()?.expect("pinned memory is host-accessible");
    let mut seen = vec![0.0f32; mine.len()];
    // The same memory, read by another bridge while `mine` (a `&mut`) is live.
    am_from_pinned_ad(&mut seen, ctx, mine.len());
    mine[0] = seen[0] + 100.0;
    Ok(())
}

#[rules_macro::derivative_rule(copy, dst = host, src = pinned, crate = crate, autodiff)]
unsafe fn am_from_pinned(#[dst] dst: *mut f32, #[src] src: *const f32, #[len] n: usize) {
    // SAFETY: the rule's contract (pinned memory is host-accessible).
    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }
}

/// Hazard (the host form: `array_misuse_a_pointer_bridge_inside_an_array_bridge_is_refused`):
/// the pointer bridge inside the array bridge ran, reading memory the outer rule held as `&mut`
/// (UB: the `&mut [f32]` is used after the read through another pointer). Now refused.
#[test]
#[ignore = "needs a GPU"]
fn array_misuse_gpu_a_pointer_bridge_inside_an_array_bridge() {
    let s = gpu();
    let _ = take_error();
    let ctx = s.context().clone();
    // SAFETY: pinned allocations of 4 f32, written before any read.
    let mut p = unsafe { ctx.alloc_pinned::<f32>(4) }.unwrap();
    let mut dp = unsafe { ctx.alloc_pinned::<f32>(4) }.unwrap();
    p.as_mut_slice().unwrap().fill(0.0);
    dp.as_mut_slice().unwrap().fill(0.0);
    let mut a = CudaArray::<f32>::new(s.context(), 4, 1, 1).unwrap();
    let mut da = CudaArray::<f32>::new(s.context(), 4, 1, 1).unwrap();
    a.copy_from_host(&s, &[1.0, 2.0, 3.0, 4.0]).unwrap();
    {
        let mut pa = AdArrayPair::new(&mut a, &mut da, &s).unwrap();
        let mut pp = AdPair::new(&mut p, &mut dp, &s).unwrap();
        let (ha, _) = pa.split();
        let (hp, _) = pp.split();
        am_download_peek_ad(hp, ha, hp);
    }
    let e = error_text();
    let got = p.as_slice().unwrap().to_vec();
    assert!(
        e.contains("inside another bridge"),
        "nested bridge ran (dst {got:?}): {e:?}"
    );
}

/// Held (and, before the extent fix, UB not visible at run time): a rule may take an `&AdArray`
/// as an extra argument, so its primitive reaches a handle of the array it holds as `&mut`.
/// `extent` through it built a `&CudaArray` beside that `&mut`; a bridge through it is refused.
#[rules_macro::derivative_rule(copy, crate = crate, autodiff)]
fn am_upload_peek(
    stream: &std::sync::Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[src] src: &[f32],
    // `#[inert]`, the only form the attribute accepts for it: the run-time refusal is tested.
    #[inert] me: &AdArray<f32>,
) -> Result<()> {
    let ext = me.extent(); // `dst` is live (a protected `&mut` argument)
    crate::memory::linear::linear_to_array(stream, dst, (0, 0, 0), src, (ext.0 * 4, 1), ext)?;
    am_upload_peek_ad(me, src, me); // refused: inside a bridge
    Ok(())
}

#[test]
#[ignore = "needs a GPU"]
fn array_misuse_gpu_a_rule_reaches_its_own_array_through_a_handle_argument() {
    let s = gpu();
    let _ = take_error();
    let mut a = CudaArray::<f32>::new(s.context(), 3, 1, 1).unwrap();
    let mut da = CudaArray::<f32>::new(s.context(), 3, 1, 1).unwrap();
    {
        let mut pa = AdArrayPair::new(&mut a, &mut da, &s).unwrap();
        let (ha, _) = pa.split();
        am_upload_peek_ad(ha, &[1.0f32, 2.0, 3.0][..], ha);
    }
    assert!(error_text().contains("inside another bridge"));
    assert_eq!(a.to_host(&s).unwrap(), [1.0, 2.0, 3.0]);
}
