//! Every rule of the std::autodiff example (`examples/autodiff/src/rules.rs`, included here as it
//! is; its `_ad` functions exist only with the `autodiff` feature) tested against its own
//! primitive in one call (`rules_runtime::testing`): the host-memory rules on every machine, the
//! device, pinned, unified and CUDA-array ones in `#[ignore]`d GPU tests (asked for with
//! `--ignored` on a machine without a GPU, they fail).
#![allow(dead_code, unused_imports)]

#[path = "../../examples/autodiff/src/rules.rs"]
mod rules;

use rules::*;
use rules_runtime::cudarc::driver::CudaStream;
use rules_runtime::memory::array::CudaArray;
use rules_runtime::testing::{
    Report, Shapes, check_fill, check_memset, check_raw_copy, check_raw_fill, check_raw_memset,
    check_raw_region, check_region,
};
use std::sync::Arc;

fn passed(r: Result<Report, rules_runtime::testing::CheckError>, what: &str) {
    match r {
        Ok(rep) => assert!(rep.comparisons > 0, "{what}: nothing compared"),
        Err(e) => panic!("{what}: {e}"),
    }
}

#[test]
fn the_examples_host_rules_agree_with_their_primitives() {
    // SAFETY (each call): the checks give every pointer a buffer of its shape's length, of the
    // memory kind the rule declares, which is what these primitives read and write.
    unsafe {
        passed(
            check_raw_copy(&mut host_copy_rule(7), Shapes::len(7)),
            "host_copy",
        );
        passed(
            check_raw_copy::<f64, _>(&mut host_copy_any_rule(5), Shapes::len(5)),
            "host_copy_any::<f64>",
        );
        // 3 × 4 boxes in rows of 5 elements (20 bytes).
        passed(
            check_raw_region(&mut host_copy2d_rule(20, 20, 3, 4), Shapes::len(20)),
            "host_copy2d",
        );
        // 2 × 3 × 2 boxes, rows of 4 elements, slices of 4 rows.
        passed(
            check_raw_region(
                &mut host_copy3d_rule(16, 4, 16, 4, 2, 3, 2),
                Shapes::len(4 * 4 * 2),
            ),
            "host_copy3d",
        );
        passed(
            check_raw_memset(&mut host_set_rule(2, 5, 0), Shapes::len(9)),
            "host_set",
        );
        passed(
            check_raw_fill(&mut host_fill_rule(1, 4), Shapes::len(6)),
            "host_fill",
        );
    }
}

fn gpu() -> Arc<CudaStream> {
    rules_runtime::cuda::stream(0).unwrap_or_else(|e| {
        panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored")
    })
}

#[test]
#[ignore = "needs a GPU"]
fn the_examples_gpu_rules_agree_with_their_primitives() {
    let s = gpu();
    let st: &CudaStream = &s;
    // SAFETY: as above, each side in the memory kind its rule declares, on `s`'s context.
    unsafe {
        passed(
            check_raw_copy(&mut upload_rule(st, 9), Shapes::len(9)),
            "upload",
        );
        passed(
            check_raw_copy(&mut download_rule(st, 9), Shapes::len(9)),
            "download",
        );
        passed(
            check_raw_copy(&mut copy_d2d_rule(st, 9), Shapes::len(9)),
            "copy_d2d",
        );
        passed(
            check_raw_copy(&mut download_pinned_rule(st, 9), Shapes::len(9)),
            "download_pinned",
        );
        passed(
            check_raw_copy(&mut unpin_rule(st, 9), Shapes::len(9)),
            "unpin",
        );
        passed(
            check_raw_copy(&mut to_unified_rule(st, 9), Shapes::len(9)),
            "to_unified",
        );
        passed(
            check_raw_copy(&mut from_unified_rule(st, 9), Shapes::len(9)),
            "from_unified",
        );
        passed(
            check_raw_region(&mut upload2d_rule(st, 20, 20, 3, 4), Shapes::len(20)),
            "upload2d",
        );
        passed(
            check_raw_region(&mut download2d_rule(st, 20, 20, 3, 4), Shapes::len(20)),
            "download2d",
        );
        passed(
            check_raw_memset(&mut set_device_rule(st, 2, 5, 0), Shapes::len(9)),
            "set_device",
        );
        passed(
            check_raw_fill(&mut fill_device_rule(st, 1, 4), Shapes::len(6)),
            "fill_device",
        );
    }
    // The array rules: a 6 × 4 array, whole or a 3 × 2 box at (2, 1).
    let whole = Shapes::len(24);
    passed(
        check_region::<CudaArray<f32>, [f32], _>(
            &mut upload_array_rule(&s),
            whole.dst_array((6, 4, 1)),
        ),
        "upload_array",
    );
    passed(
        check_region::<[f32], CudaArray<f32>, _>(
            &mut download_array_rule(&s),
            whole.src_array((6, 4, 1)),
        ),
        "download_array",
    );
    passed(
        check_region::<CudaArray<f32>, [f32], _>(
            &mut rows_to_array_rule(&s, 2, 1, 12, 3, 2),
            Shapes::lens(24, 6).dst_array((6, 4, 1)),
        ),
        "rows_to_array",
    );
    passed(
        check_region::<[f32], CudaArray<f32>, _>(
            &mut array_to_rows_rule(&s, 12, 2, 1, 3, 2),
            Shapes::lens(6, 24).src_array((6, 4, 1)),
        ),
        "array_to_rows",
    );
    passed(
        check_memset::<CudaArray<f32>, _>(
            &mut zero_array_run_rule(&s, 1, 0, 4, 1),
            whole.dst_array((24, 1, 1)),
        ),
        "zero_array_run",
    );
    passed(
        check_fill::<CudaArray<f32>, _>(
            &mut fill_array_run_rule(&s, 1, 0, 4, 1),
            whole.dst_array((24, 1, 1)),
        ),
        "fill_array_run",
    );
}
