//! `rules_runtime::testing`'s one-call rule checks on the GPU: every ready-made rule of
//! `rules_runtime::cudarc_rules` in the memory kinds it takes, the examples' rules (`upload`,
//! `download`), every ready-made rule of `rules_runtime::array_rules` (1-D, 2-D and 3-D CUDA
//! arrays, boxes at offsets, the linear side in every memory kind) and the array memsets and
//! fills of `rules_tests::arrays`, pointer rules on device, pinned and unified memory, and a
//! wrong device rule, a wrong array rule and a wrong device pointer rule caught.
//!
//! `#[ignore]`d like the rest of the GPU suite: without a GPU they are reported as ignored
//! (skipped), never as passed; with `--include-ignored`, a missing driver or device fails them.

use num_complex::Complex;
use rules_runtime::array_rules::{
    array_to_array_rule, download_array_rule, from_array_rule, to_array, to_array_rule,
    upload_array_rule,
};
use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DriverError, PinnedHostSlice, UnifiedSlice, sys,
};
use rules_runtime::cudarc_rules::{
    memcpy_dtod_rule, memcpy_dtoh_rule, memcpy_htod_rule, memset_zeros_rule,
};
use rules_runtime::derivative_rule;
use rules_runtime::memory::array::CudaArray;
use rules_runtime::testing::{
    Check, Report, Shapes, check_copy, check_fill, check_memset, check_raw_copy, check_raw_fill,
    check_raw_memset, check_region,
};
use rules_tests::arrays::{
    fill_array_rows_rule, fill_array_rule, zero_array_rows_rule, zero_array_rule,
};
use rules_tests::{download_rule, upload_rule};
use std::sync::Arc;

fn gpu() -> Arc<CudaStream> {
    match rules_runtime::cuda::stream(0) {
        Ok(s) => s,
        Err(e) => panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored"),
    }
}

/// The report of a passing check, or a panic with every failure.
fn passed(r: Result<Report, rules_runtime::testing::CheckError>, what: &str) -> Report {
    let r = r.unwrap_or_else(|e| panic!("{what}: {e}"));
    // Every check ran (a memset, with one argument, makes about 45 comparisons; a copy 150).
    assert_eq!(r.checks.len(), 6, "{what}: {r:?}");
    assert!(r.comparisons > 40, "{what}: {r:?}");
    r
}

#[test]
#[ignore = "needs a GPU"]
fn memcpy_htod_in_every_memory_kind() {
    let s = gpu();
    let n = Shapes::len(1031);
    passed(
        check_copy::<CudaSlice<f32>, [f32], _>(&mut memcpy_htod_rule(&s), n),
        "device ← pageable",
    );
    passed(
        check_copy::<CudaSlice<f64>, Vec<f64>, _>(&mut memcpy_htod_rule(&s), n),
        "device ← Vec",
    );
    passed(
        check_copy::<CudaSlice<f32>, PinnedHostSlice<f32>, _>(&mut memcpy_htod_rule(&s), n),
        "device ← pinned",
    );
    passed(
        check_copy::<UnifiedSlice<f32>, [f32], _>(&mut memcpy_htod_rule(&s), n),
        "unified ← pageable",
    );
    passed(
        check_copy::<UnifiedSlice<half::f16>, PinnedHostSlice<half::f16>, _>(
            &mut memcpy_htod_rule(&s),
            n,
        ),
        "unified ← pinned",
    );
}

#[test]
#[ignore = "needs a GPU"]
fn memcpy_dtoh_in_every_memory_kind() {
    let s = gpu();
    let n = Shapes::len(1031);
    passed(
        check_copy::<[f32], CudaSlice<f32>, _>(&mut memcpy_dtoh_rule(&s), n),
        "pageable ← device",
    );
    passed(
        check_copy::<Vec<half::bf16>, CudaSlice<half::bf16>, _>(&mut memcpy_dtoh_rule(&s), n),
        "Vec ← device",
    );
    passed(
        check_copy::<PinnedHostSlice<f32>, CudaSlice<f32>, _>(&mut memcpy_dtoh_rule(&s), n),
        "pinned ← device",
    );
    passed(
        check_copy::<[f64], UnifiedSlice<f64>, _>(&mut memcpy_dtoh_rule(&s), n),
        "pageable ← unified",
    );
    passed(
        check_copy::<PinnedHostSlice<f32>, UnifiedSlice<f32>, _>(&mut memcpy_dtoh_rule(&s), n),
        "pinned ← unified",
    );
}

#[test]
#[ignore = "needs a GPU"]
fn memcpy_dtod_and_memset_zeros() {
    let s = gpu();
    let n = Shapes::len(4099);
    passed(
        check_copy::<CudaSlice<f32>, CudaSlice<f32>, _>(&mut memcpy_dtod_rule(&s), n),
        "device ← device",
    );
    passed(
        check_copy::<UnifiedSlice<f32>, CudaSlice<f32>, _>(&mut memcpy_dtod_rule(&s), n),
        "unified ← device",
    );
    passed(
        check_copy::<CudaSlice<f64>, UnifiedSlice<f64>, _>(&mut memcpy_dtod_rule(&s), n),
        "device ← unified",
    );
    let r = passed(
        check_memset::<CudaSlice<f32>, _>(&mut memset_zeros_rule(&s), n),
        "memset device",
    );
    assert_eq!(r.footprint.len(), 4099);
    passed(
        check_memset::<UnifiedSlice<f64>, _>(&mut memset_zeros_rule(&s), n),
        "memset unified",
    );
}

#[test]
#[ignore = "needs a GPU"]
fn the_examples_upload_and_download() {
    // The round trip's rules (`tests/examples/round_trip.rs`, defined in the crate library).
    let s = gpu();
    passed(
        check_copy::<CudaSlice<f32>, [f32], _>(&mut upload_rule(&s), Shapes::len(3)),
        "upload f32",
    );
    passed(
        check_copy::<[f32], CudaSlice<f32>, _>(&mut download_rule(&s), Shapes::len(3)),
        "download f32",
    );
    passed(
        check_copy::<CudaSlice<f64>, [f64], _>(&mut upload_rule(&s), Shapes::len(100_003)),
        "upload f64",
    );
    passed(
        check_copy::<[f64], CudaSlice<f64>, _>(&mut download_rule(&s), Shapes::len(100_003)),
        "download f64",
    );
}

/// An upload of the first half only: its rule's reverse is a whole-buffer copy's.
#[derivative_rule(copy)]
fn upload_prefix(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &[f32],
) -> Result<(), DriverError> {
    let k = dst.len() / 2;
    let mut head = dst.slice_mut(..k);
    stream.memcpy_htod(&src[..k], &mut head)
}

#[test]
#[ignore = "needs a GPU"]
fn a_wrong_device_rule_is_caught() {
    let s = gpu();
    let e = check_copy(&mut upload_prefix_rule(&s), Shapes::len(64)).unwrap_err();
    assert!(e.failed(Check::DotProduct), "{e}");
    assert!(e.failed(Check::Footprint), "{e}");
    assert!(e.to_string().contains("[footprint]"), "{e}");
}

// ---- CUDA arrays ---------------------------------------------------------------------------

/// The 3-D array the box copies use: 9 × 6 × 4, a 5 × 4 × 3 box at (2, 1, 1) of it.
const ARR: (usize, usize, usize) = (9, 6, 4);
/// The linear side of those copies: rows of 6 elements (24 bytes of f32), 5 rows a slice, 3
/// slices: 90 elements, of which the box is 60 (the rest is pitch padding).
const LIN: usize = 6 * 5 * 3;
const BOX: usize = 5 * 4 * 3;

#[test]
#[ignore = "needs a GPU"]
fn to_array_with_the_linear_side_in_every_memory_kind() {
    let s = gpu();
    let rule = || to_array_rule(&s, 2, 1, 1, 6 * 4, 5, 5, 4, 3);
    let n = Shapes::lens(0, LIN).dst_array(ARR);
    let r = passed(
        check_region::<CudaArray<f32>, CudaSlice<f32>, _>(&mut rule(), n),
        "array ← device",
    );
    // Exactly the box: every element of it, nothing around it.
    assert_eq!(r.footprint.len(), BOX);
    assert_eq!(r.footprint[0], (9 * 6 + 9) + 2);
    passed(
        check_region::<CudaArray<f32>, [f32], _>(&mut rule(), n),
        "array ← pageable",
    );
    passed(
        check_region::<CudaArray<f32>, PinnedHostSlice<f32>, _>(&mut rule(), n),
        "array ← pinned",
    );
    passed(
        check_region::<CudaArray<f32>, UnifiedSlice<f32>, _>(&mut rule(), n),
        "array ← unified",
    );
    // A 2-D array, f64 (two 32-bit channels), a 7 × 3 box at (4, 2) from rows 8 apart.
    let r = passed(
        check_region::<CudaArray<f64>, CudaSlice<f64>, _>(
            &mut to_array_rule(&s, 4, 2, 0, 8 * 8, 3, 7, 3, 1),
            Shapes::lens(0, 8 * 3).dst_array((16, 8, 1)),
        ),
        "2-D array ← device, f64",
    );
    assert_eq!(r.footprint.len(), 7 * 3);
}

#[test]
#[ignore = "needs a GPU"]
fn from_array_with_the_linear_side_in_every_memory_kind() {
    let s = gpu();
    let rule = || from_array_rule(&s, 6 * 4, 5, 2, 1, 1, 5, 4, 3);
    let n = Shapes::lens(LIN, 0).src_array(ARR);
    let r = passed(
        check_region::<CudaSlice<f32>, CudaArray<f32>, _>(&mut rule(), n),
        "device ← array",
    );
    assert_eq!(r.footprint.len(), BOX);
    passed(
        check_region::<[f32], CudaArray<f32>, _>(&mut rule(), n),
        "pageable ← array",
    );
    passed(
        check_region::<PinnedHostSlice<f32>, CudaArray<f32>, _>(&mut rule(), n),
        "pinned ← array",
    );
    passed(
        check_region::<UnifiedSlice<f32>, CudaArray<f32>, _>(&mut rule(), n),
        "unified ← array",
    );
}

#[test]
#[ignore = "needs a GPU"]
fn array_to_array_and_whole_arrays() {
    let s = gpu();
    // A 5 × 4 × 3 box at (1, 0, 0) of a 7 × 5 × 3 array into one at (2, 1, 1) of 9 × 6 × 4.
    let r = passed(
        check_region::<CudaArray<f32>, CudaArray<f32>, _>(
            &mut array_to_array_rule(&s, 2, 1, 1, 1, 0, 0, 5, 4, 3),
            Shapes::len(0).dst_array(ARR).src_array((7, 5, 3)),
        ),
        "array ← array",
    );
    assert_eq!(r.footprint.len(), BOX);
    // Whole arrays (a plain `copy` with an array side), 3-D, 2-D and 1-D.
    let r = passed(
        check_region::<CudaArray<f32>, CudaSlice<f32>, _>(
            &mut upload_array_rule(&s),
            Shapes::len(0).dst_array((7, 3, 2)).src_array((42, 1, 1)),
        ),
        "upload_array, 3-D",
    );
    assert_eq!(r.footprint.len(), 42);
    passed(
        check_region::<CudaArray<half::f16>, [half::f16], _>(
            &mut upload_array_rule(&s),
            Shapes::len(0).dst_array((12, 5, 1)).src_array((60, 1, 1)),
        ),
        "upload_array, 2-D, f16",
    );
    passed(
        check_region::<CudaArray<Complex<f32>>, [Complex<f32>], _>(
            &mut upload_array_rule(&s),
            Shapes::len(33),
        ),
        "upload_array, 1-D, complex f32",
    );
    let r = passed(
        check_region::<[f32], CudaArray<f32>, _>(
            &mut download_array_rule(&s),
            Shapes::len(0).src_array((7, 3, 2)).dst_array((42, 1, 1)),
        ),
        "download_array, 3-D",
    );
    assert_eq!(r.footprint.len(), 42);
    passed(
        check_region::<CudaSlice<f64>, CudaArray<f64>, _>(
            &mut download_array_rule(&s),
            Shapes::len(45),
        ),
        "download_array, 1-D, f64",
    );
}

#[test]
#[ignore = "needs a GPU"]
fn array_memsets_and_fills() {
    let s = gpu();
    let rows = Shapes::len(0).dst_array((9, 6, 1));
    let r = passed(
        check_memset::<CudaArray<f32>, _>(&mut zero_array_rows_rule(&s, 2, 1, 5, 3), rows),
        "zero rows of an array",
    );
    assert_eq!(r.footprint.len(), 5 * 3);
    passed(
        check_memset::<CudaArray<f64>, _>(&mut zero_array_rule(&s), Shapes::len(0).dst_array(ARR)),
        "zero a whole 3-D array",
    );
    let r = passed(
        check_fill::<CudaArray<f32>, _>(&mut fill_array_rows_rule(&s, 2, 1, 5, 3), rows),
        "fill rows of an array",
    );
    assert_eq!(r.footprint.len(), 5 * 3);
    passed(
        check_fill::<CudaArray<f32>, _>(&mut fill_array_rule(&s), Shapes::len(0).dst_array(ARR)),
        "fill a whole 3-D array",
    );
}

/// A box copy into an array that writes only the first half of each row of its box: its rule
/// zeroes and accumulates the whole box.
#[derivative_rule(copy3d)]
#[allow(clippy::too_many_arguments)]
fn to_array_half_rows(
    stream: &Arc<CudaStream>,
    #[dst] dst: &mut CudaArray<f32>,
    #[dst_x] x: usize,
    #[dst_y] y: usize,
    #[dst_z] z: usize,
    #[src] src: &CudaSlice<f32>,
    #[src_pitch] pitch: usize,
    #[src_slice_height] rows: usize,
    #[width] width: usize,
    #[height] height: usize,
    #[depth] depth: usize,
) -> rules_runtime::Result<()> {
    let half = width / 2;
    to_array(stream, dst, x, y, z, src, pitch, rows, half, height, depth)
}

#[test]
#[ignore = "needs a GPU"]
fn a_wrong_array_rule_is_caught() {
    let s = gpu();
    let mut rule = to_array_half_rows_rule(&s, 2, 1, 1, 6 * 4, 5, 6, 4, 3);
    let e = check_region(&mut rule, Shapes::lens(0, LIN).dst_array(ARR)).unwrap_err();
    assert!(e.failed(Check::Footprint), "{e}");
    assert!(e.failed(Check::DotProduct), "{e}");
    // The footprint names the counts: 3 of each row's 6 elements written, 4 rows, 3 slices.
    assert!(
        e.to_string()
            .contains("the primitive writes 36 element(s) of dst, the rule's forward writes 72"),
        "{e}"
    );
}

// ---- Pointer rules on device, pinned and unified memory ---------------------------------------

/// Bytes from one address to another, on the stream (the driver reads the kinds from the
/// unified address space).
///
/// # Safety
/// Both ranges valid for `n` elements, ordered on `stream`.
unsafe fn memcpy<T>(
    stream: &CudaStream,
    d: *mut T,
    s: *const T,
    n: usize,
) -> Result<(), DriverError> {
    let bytes = n * size_of::<T>();
    unsafe { sys::cuMemcpyAsync(d as u64, s as u64, bytes, stream.cu_stream()).result() }
}

/// Device → device at element offsets, any element type.
///
/// # Safety
/// `dst + doff .. + n` and `src + soff .. + n` valid device memory, disjoint.
#[derivative_rule(copy, dst = device, src = device)]
unsafe fn copy_d2d<T>(
    stream: &Arc<CudaStream>,
    #[dst] dst: *mut T,
    #[dst_offset] doff: usize,
    #[src] src: *const T,
    #[src_offset] soff: usize,
    #[len] n: usize,
) -> Result<(), DriverError> {
    unsafe { memcpy(stream, dst.wrapping_add(doff), src.wrapping_add(soff), n) }
}

/// Host → device, complex data.
///
/// # Safety
/// `dst .. + n` valid device memory, `src .. + n` valid host memory.
#[derivative_rule(copy, dst = device, src = host)]
unsafe fn copy_h2d(
    stream: &Arc<CudaStream>,
    #[dst] dst: *mut Complex<f64>,
    #[src] src: *const Complex<f64>,
    #[len] n: usize,
) -> Result<(), DriverError> {
    unsafe { memcpy(stream, dst, src, n)? };
    // Pageable host memory is read before the call returns.
    stream.synchronize()
}

/// Device → host.
///
/// # Safety
/// `dst .. + n` valid host memory, `src .. + n` valid device memory.
#[derivative_rule(copy, dst = host, src = device)]
unsafe fn copy_d2h(
    stream: &Arc<CudaStream>,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    unsafe { memcpy(stream, dst, src, n)? };
    stream.synchronize()
}

/// Pinned → unified.
///
/// # Safety
/// `dst .. + n` valid unified memory, `src .. + n` valid pinned memory.
#[derivative_rule(copy, dst = unified, src = pinned)]
unsafe fn copy_pinned_to_unified(
    stream: &Arc<CudaStream>,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    unsafe { memcpy(stream, dst, src, n) }
}

/// A device memset of a run to zero (`cuMemsetD32Async`).
///
/// # Safety
/// `dst + off .. + n` valid device memory.
#[derivative_rule(memset, dst = device)]
unsafe fn zero_d32(
    stream: &Arc<CudaStream>,
    #[dst] dst: *mut f32,
    #[dst_offset] off: usize,
    #[len] n: usize,
) -> Result<(), DriverError> {
    let d = dst.wrapping_add(off) as u64;
    unsafe { sys::cuMemsetD32Async(d, 0, n, stream.cu_stream()).result() }
}

/// A device fill of a run with an f32 value (its bits, by `cuMemsetD32Async`).
///
/// # Safety
/// `dst + off .. + n` valid device memory.
#[derivative_rule(fill, dst = device)]
unsafe fn fill_d32(
    stream: &Arc<CudaStream>,
    #[dst] dst: *mut f32,
    #[dst_offset] off: usize,
    #[len] n: usize,
    #[value] v: f32,
) -> Result<(), DriverError> {
    let d = dst.wrapping_add(off) as u64;
    unsafe { sys::cuMemsetD32Async(d, v.to_bits(), n, stream.cu_stream()).result() }
}

/// Device → device of all but the last element: its rule's reverse is a whole run's.
///
/// # Safety
/// As [`copy_d2d`].
#[derivative_rule(copy, dst = device, src = device)]
unsafe fn copy_d2d_short(
    stream: &Arc<CudaStream>,
    #[dst] dst: *mut f32,
    #[src] src: *const f32,
    #[len] n: usize,
) -> Result<(), DriverError> {
    unsafe { memcpy(stream, dst, src, n.saturating_sub(1)) }
}

#[test]
#[ignore = "needs a GPU"]
fn device_pointer_rules() {
    let s = gpu();
    // SAFETY: every run lies within its shape, on memory of the kinds each rule declares.
    unsafe {
        // d2d(doff 2, soff 1, n 5) on a dst of 9 and a src of 8: the footprint is dst[2..7].
        let r = passed(
            check_raw_copy::<f32, _>(&mut copy_d2d_rule(&s, 2, 1, 5), Shapes::lens(9, 8)),
            "device ← device, pointers, f32",
        );
        assert_eq!(r.footprint, vec![2, 3, 4, 5, 6]);
        passed(
            check_raw_copy::<Complex<f64>, _>(
                &mut copy_d2d_rule(&s, 0, 3, 1000),
                Shapes::lens(1000, 1003),
            ),
            "device ← device, pointers, complex f64",
        );
        passed(
            check_raw_copy::<half::bf16, _>(&mut copy_d2d_rule(&s, 1, 0, 7), Shapes::lens(8, 7)),
            "device ← device, pointers, bf16",
        );
        passed(
            check_raw_copy(&mut copy_h2d_rule(&s, 33), Shapes::len(33)),
            "device ← host, pointers, complex f64",
        );
        passed(
            check_raw_copy(&mut copy_d2h_rule(&s, 1031), Shapes::len(1031)),
            "host ← device, pointers",
        );
        passed(
            check_raw_copy(&mut copy_pinned_to_unified_rule(&s, 64), Shapes::len(64)),
            "unified ← pinned, pointers",
        );
        let r = passed(
            check_raw_memset(&mut zero_d32_rule(&s, 3, 10), Shapes::len(17)),
            "memset device, pointer",
        );
        assert_eq!(r.footprint, (3..13).collect::<Vec<_>>());
        let r = passed(
            check_raw_fill(&mut fill_d32_rule(&s, 1, 5), Shapes::len(9)),
            "fill device, pointer",
        );
        assert_eq!(r.footprint, (1..6).collect::<Vec<_>>());
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_wrong_device_pointer_rule_is_caught() {
    let s = gpu();
    // SAFETY: the run of 16 lies within both shapes, on device memory.
    let e =
        unsafe { check_raw_copy(&mut copy_d2d_short_rule(&s, 16), Shapes::len(16)) }.unwrap_err();
    assert!(e.failed(Check::Footprint), "{e}");
    assert!(e.failed(Check::DotProduct), "{e}");
    assert!(
        e.to_string()
            .contains("the primitive writes 15 element(s) of dst, the rule's forward writes 16"),
        "{e}"
    );
}
