//! `rules_runtime::testing`'s one-call rule checks on the GPU: every ready-made rule of
//! `rules_runtime::cudarc_rules` in the memory kinds it takes, the examples' rules (`upload`,
//! `download`), and a wrong device rule caught.
//!
//! `#[ignore]`d like the rest of the GPU suite: without a GPU they are reported as ignored
//! (skipped), never as passed; with `--include-ignored`, a missing driver or device fails them.

use rules_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DriverError, PinnedHostSlice, UnifiedSlice,
};
use rules_runtime::cudarc_rules::{
    memcpy_dtod_rule, memcpy_dtoh_rule, memcpy_htod_rule, memset_zeros_rule,
};
use rules_runtime::derivative_rule;
use rules_runtime::testing::{Check, Report, Shapes, check_copy, check_memset};
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
