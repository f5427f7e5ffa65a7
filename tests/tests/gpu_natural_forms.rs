//! The device, pinned and unified forms of `natural_forms.rs`: users' primitives on cudarc buffers, each through the one-call check
//! of `rules_runtime::testing`, and (built with `--features checked`) through the checked mode.
//! `#[ignore]`d: run with `--include-ignored` on a GPU machine. Each test asserts the outcome the
//! review expects; a failing assertion prints what was found instead.
//!
//! cargo test -p rules-tests --features rules-runtime/testing --test gpu_natural_forms -- --include-ignored --nocapture
//! cargo test -p rules-tests --features checked --test gpu_natural_forms -- --include-ignored --nocapture

use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DriverError,
    PinnedHostSlice, UnifiedSlice,
};
use rules_runtime::ops::AsStream;
use rules_runtime::prelude::*;
use rules_runtime::testing::{
    Check, CheckError, Report, Shapes, check_copy, check_fill, check_memset,
};
use std::sync::Arc;

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

fn checked() -> bool {
    cfg!(feature = "checked")
}

fn show(name: &str, r: &Result<Report, CheckError>) {
    match r {
        Ok(rep) => eprintln!("form {name}: PASS footprint={:?}", rep.footprint),
        Err(e) => eprintln!("form {name}: {e}"),
    }
}

/// Failed with `check`, or, in checked mode, with `PrimalDisagrees`.
fn caught(r: &Result<Report, CheckError>, check: Check) -> bool {
    match r {
        Err(e) if e.failed(check) => true,
        Err(CheckError::Run {
            error: Error::PrimalDisagrees(_),
            ..
        }) => checked(),
        _ => false,
    }
}

fn passed(name: &str, r: &Result<Report, CheckError>) -> bool {
    show(name, r);
    r.is_ok()
}

// ---- G1: a stream in a struct that also holds an offset (taken as the stream, by AsStream) --

/// The launch configuration a user passes around: the stream, and where to write.
pub struct Launch {
    pub stream: Arc<CudaStream>,
    pub off: usize,
}

impl AsStream for Launch {
    fn as_stream(&self) -> &CudaStream {
        &self.stream
    }
}

/// G1: writes `dst[off..] ← src[..n - off]`; the offset lives in the stream struct.
#[derivative_rule(copy)]
pub fn g1_upload_at(
    launch: &Launch,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    let n = dst.len();
    let off = launch.off.min(n);
    launch
        .stream
        .memcpy_htod(&src[..n - off], &mut dst.slice_mut(off..))
}

#[test]
#[ignore = "needs a GPU"]
fn g1_an_offset_inside_the_stream_struct_is_caught() {
    let s = gpu();
    let l = Launch {
        stream: s.clone(),
        off: 0,
    };
    assert!(passed(
        "G1 off 0",
        &check_copy(&mut g1_upload_at_rule(&l), Shapes::len(33))
    ));
    let l = Launch { stream: s, off: 3 };
    let r = check_copy(&mut g1_upload_at_rule(&l), Shapes::len(33));
    show("G1 off 3", &r);
    assert!(caught(&r, Check::Footprint));
}

// ---- G2: a stream through a type alias, pinned and unified forms -------------------------

type Stream = Arc<CudaStream>;

/// G2: host → device through an alias of the stream type.
#[derivative_rule(copy)]
pub fn g2_upload_alias(
    s: &Stream,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    s.memcpy_htod(src, dst)
}

/// G2b: pinned → unified.
#[derivative_rule(copy)]
pub fn g2b_pinned_to_unified(
    s: &Stream,
    #[dst] dst: &mut UnifiedSlice<f32>,
    #[src] src: &PinnedHostSlice<f32>,
) -> Result<(), DriverError> {
    s.memcpy_htod(src, dst)
}

/// G2c: device → pinned, only the first half (a prefix sliced inside the body).
#[derivative_rule(copy)]
pub fn g2c_half_to_pinned(
    s: &Stream,
    #[dst] dst: &mut PinnedHostSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    let k = src.len() / 2;
    s.synchronize()?;
    let h = dst.as_mut_slice()?;
    s.memcpy_dtoh(&src.slice(..k), &mut h[..k])
}

#[test]
#[ignore = "needs a GPU"]
fn g2_alias_streams_pinned_and_unified() {
    let s = gpu();
    assert!(passed(
        "G2 alias",
        &check_copy(&mut g2_upload_alias_rule(&s), Shapes::len(1031))
    ));
    assert!(passed(
        "G2b pinned to unified",
        &check_copy(&mut g2b_pinned_to_unified_rule(&s), Shapes::len(257))
    ));
    let r = check_copy(&mut g2c_half_to_pinned_rule(&s), Shapes::len(64));
    show("G2c half to pinned", &r);
    assert!(caught(&r, Check::Footprint));
}

// ---- G3: views --------------------------------------------------------------------------

/// G3: device → device between views.
#[derivative_rule(copy)]
pub fn g3_view_copy(
    s: &Arc<CudaStream>,
    #[dst] dst: &mut CudaViewMut<'_, f32>,
    #[src] src: &CudaView<'_, f32>,
) -> Result<(), DriverError> {
    s.memcpy_dtod(src, dst)
}

/// G3b: the same between views, but of the first element less (a view narrowed in the body).
#[derivative_rule(copy)]
pub fn g3b_view_copy_short(
    s: &Arc<CudaStream>,
    #[dst] dst: &mut CudaViewMut<'_, f32>,
    #[src] src: &CudaView<'_, f32>,
) -> Result<(), DriverError> {
    let n = dst.len();
    s.memcpy_dtod(&src.slice(1..), &mut dst.slice_mut(1..n))
}

fn host(b: &CudaSlice<f32>) -> Vec<f32> {
    b.stream().clone_dtoh(b).unwrap()
}

#[test]
#[ignore = "needs a GPU"]
fn g3_views_round_trip_and_a_narrowed_view() {
    // No one-call check takes views (documented): the round trip by hand, on views at an
    // offset of larger buffers; the rule must not touch anything outside the views.
    let s = gpu();
    let xs: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let x = s.clone_htod(&xs).unwrap();
    let mut dx = s.clone_htod(&[1.0f32; 10]).unwrap();
    let mut y = s.clone_htod(&[0.0f32; 10]).unwrap();
    let mut dy = s.clone_htod(&[5.0f32; 10]).unwrap();
    {
        let xv = x.slice(2..6);
        let mut dxv = dx.slice_mut(2..6);
        let mut yv = y.slice_mut(4..8);
        let mut dyv = dy.slice_mut(4..8);
        let tape = g3_view_copy_rule(&s)
            .augmented_primal(
                Duplicated::new(&mut yv, &mut dyv),
                Duplicated::new(&xv, &mut dxv),
            )
            .unwrap();
        g3_view_copy_rule(&s)
            .reverse(
                tape,
                Duplicated::new(&mut yv, &mut dyv),
                Duplicated::new(&xv, &mut dxv),
            )
            .unwrap();
    }
    assert_eq!(host(&y), [0., 0., 0., 0., 2., 3., 4., 5., 0., 0.]);
    assert_eq!(host(&dy), [5., 5., 5., 5., 0., 0., 0., 0., 5., 5.]);
    assert_eq!(host(&dx), [1., 1., 6., 6., 6., 6., 1., 1., 1., 1.]);
    // The narrowed copy: the rule moves d_dst[0] into d_src[0] though the primitive never
    // wrote dst[0]; checked mode reports it, the unchecked forward says nothing.
    let mut y = s.clone_htod(&[9.0f32; 4]).unwrap();
    let mut dy = s.clone_htod(&[0.0f32; 4]).unwrap();
    let xv = x.slice(0..4);
    let r = g3b_view_copy_short_rule(&s).forward(
        Duplicated::new(&mut y.slice_mut(..), &mut dy.slice_mut(..)),
        Const(&xv),
    );
    eprintln!("form G3b forward: {r:?}");
    assert_eq!(matches!(r, Err(Error::PrimalDisagrees(_))), checked());
}

// ---- G4-G6: device memsets and fills -------------------------------------------------------

/// G4: zeroes all but the last element (a prefix view made in the body).
#[derivative_rule(memset)]
pub fn g4_memset_prefix(
    s: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
) -> Result<(), DriverError> {
    let k = dst.len() - 1;
    s.memset_zeros(&mut dst.slice_mut(..k))
}

/// G5: a fill of `2 v` through an upload of a computed vector.
#[derivative_rule(fill)]
pub fn g5_fill_twice(
    s: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: f32,
) -> Result<(), DriverError> {
    let host = vec![2.0 * v; dst.len()];
    s.memcpy_htod(&host, dst)
}

/// G5b: a right fill the same way, on unified memory.
#[derivative_rule(fill)]
pub fn g5b_fill_unified(
    s: &Arc<CudaStream>,
    #[dst] dst: &mut UnifiedSlice<f32>,
    #[value] v: f32,
) -> Result<(), DriverError> {
    let host = vec![v; dst.len()];
    s.memcpy_htod(&host, dst)
}

/// G6: a memset of rows that zeroes the whole buffer (padding included).
#[derivative_rule(memset)]
pub fn g6_memset_rows_all(
    s: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[width] w: usize,
    #[height] h: usize,
    #[dst_pitch] p: usize,
) -> Result<(), DriverError> {
    let _ = (w, h, p);
    s.memset_zeros(dst)
}

#[test]
#[ignore = "needs a GPU"]
fn g4_g6_device_memsets_and_fills() {
    let s = gpu();
    let r = check_memset(&mut g4_memset_prefix_rule(&s), Shapes::len(65));
    show("G4 memset prefix", &r);
    assert!(caught(&r, Check::Footprint));
    let r = check_fill(&mut g5_fill_twice_rule(&s), Shapes::len(17));
    show("G5 fill 2v", &r);
    assert!(caught(&r, Check::FiniteDifferences));
    assert!(passed(
        "G5b fill unified",
        &check_fill(&mut g5b_fill_unified_rule(&s), Shapes::len(17))
    ));
    let r = check_memset(&mut g6_memset_rows_all_rule(&s, 2, 3, 16), Shapes::len(12));
    show("G6 memset rows writes the padding", &r);
    assert!(caught(&r, Check::Footprint));
}

// ---- G7: raw device pointers (no one-call check: checked mode only) ------------------------

/// G7: a device pointer copy of one element more than `n`.
///
/// # Safety
/// Both ranges valid for `n + 1` elements.
#[derivative_rule(copy, dst = device, src = device)]
pub unsafe fn g7_raw_n_plus_1(
    s: &Arc<CudaStream>,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    unsafe {
        rules_runtime::cudarc::driver::result::memcpy_dtod_async(
            dst as u64,
            src as u64,
            (n + 1) * 4,
            s.cu_stream(),
        )
    }
}

/// G7b: a device pointer copy that writes only half of `n`.
///
/// # Safety
/// Both ranges valid for `n` elements.
#[derivative_rule(copy, dst = device, src = device)]
pub unsafe fn g7b_raw_half(
    s: &Arc<CudaStream>,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    unsafe {
        rules_runtime::cudarc::driver::result::memcpy_dtod_async(
            dst as u64,
            src as u64,
            n / 2 * 4,
            s.cu_stream(),
        )
    }
}

#[test]
#[ignore = "needs a GPU"]
fn g7_raw_device_pointers_in_checked_mode() {
    let s = gpu();
    let x = s.clone_htod(&[1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let mut y = s.clone_htod(&[0.0f32; 5]).unwrap();
    let mut dy = s.clone_htod(&[7.0f32; 5]).unwrap();
    let (xp, _g1) = x.device_ptr(&s);
    let (yp, _g2) = y.device_ptr_mut(&s);
    let (dyp, _g3) = dy.device_ptr_mut(&s);
    // SAFETY: 5 elements each; n = 4 (+ 1 written by G7).
    let r = unsafe {
        g7_raw_n_plus_1_rule(&s, 4).forward(
            Duplicated::new(yp as *mut f32, dyp as *mut f32),
            Const(xp as *const f32),
        )
    };
    eprintln!(
        "form G7 n+1 forward: {r:?} (outside the box: checked mode is documented not to see it)"
    );
    assert!(r.is_ok());
    // A fresh destination: the first call left `y` equal to `x`, so a copy of half of it would
    // find the other half already agreeing.
    let mut y2 = s.clone_htod(&[0.0f32; 5]).unwrap();
    let (y2p, _g4) = y2.device_ptr_mut(&s);
    // SAFETY: as above.
    let r = unsafe {
        g7b_raw_half_rule(&s, 4).forward(
            Duplicated::new(y2p as *mut f32, dyp as *mut f32),
            Const(xp as *const f32),
        )
    };
    eprintln!("form G7b half forward: {r:?}");
    assert_eq!(matches!(r, Err(Error::PrimalDisagrees(_))), checked());
}

// ---- G8: the stream marked `#[stream]` is not the one the copy runs on ----------------------

/// G8: the copy runs on `b`; the rule orders its shadow work (and checked mode its compare) on
/// the marked `a`. Accepted (the user's mark); the checked compare on `a` may read `dst` before
/// `b`'s copy lands.
#[derivative_rule(copy)]
pub fn g8_marked_other(
    #[stream] _a: &Arc<CudaStream>,
    b: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    b.memcpy_dtod(src, dst)
}

#[test]
#[ignore = "needs a GPU"]
fn g8_a_copy_on_another_stream_than_the_marked_one() {
    let a = gpu();
    let b = a.context().new_stream().unwrap();
    let r = check_copy(&mut g8_marked_other_rule(&a, &b), Shapes::len(4099));
    show("G8 one-call", &r);
    // A large copy on b, then (checked mode) the compare on a: reported as a disagreement when
    // the compare wins the race; unchecked, the forward returns at once.
    let n = 1 << 26;
    let x = a.clone_htod(&vec![1.0f32; n]).unwrap();
    let mut y = a.alloc_zeros::<f32>(n).unwrap();
    let mut dy = a.alloc_zeros::<f32>(n).unwrap();
    a.synchronize().unwrap();
    let r = g8_marked_other_rule(&a, &b).forward(Duplicated::new(&mut y, &mut dy), Const(&x));
    eprintln!(
        "form G8 forward n = 2^26: {:?}",
        r.as_ref().map_err(|e| e.to_string())
    );
}
