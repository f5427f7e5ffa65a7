//! What the expansion contains: three functions next to the primal, runtime paths, the bodies
//! of each kind, and the fallback on error.

use super::{errors, expand};

#[test]
fn a_good_rule_expands_to_three_functions_and_no_error() {
    let out = expand(
        "copy",
        "pub fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32]) { dst.copy_from_slice(src) }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for name in [
        "fn copy_into (",
        "fn copy_into_forward",
        "fn copy_into_augmented_primal",
        "fn copy_into_reverse",
    ] {
        assert!(out.contains(name), "missing {name} in {out}");
    }
    // Role attributes are stripped from the re-emitted function.
    assert!(
        !out.contains("# [dst]") && !out.contains("# [src]"),
        "{out}"
    );
}

#[test]
fn a_renamed_runtime_is_the_only_runtime_path() {
    let out = expand(
        "copy, crate = rt",
        "fn f(#[dst] d: &mut Vec<T>, #[src] s: &[T], x: usize) -> Result<(), E> { Ok(()) }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(out.contains("rt :: __private"), "{out}");
    assert!(!out.contains("rules_runtime"), "{out}");
    let out = expand(
        "copy, crate = rt, dst = host, src = unified",
        "unsafe fn f(#[dst] d: *mut T, #[src] s: *const T, #[len] n: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(!out.contains("rules_runtime"), "{out}");
}

#[test]
fn collective_rules_expand_to_runtime_calls() {
    let buffers = "#[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>";
    for (kind, ranks, body) in [
        ("broadcast", ", #[root] r: usize", "collective_forward"),
        ("reduce", ", #[root] r: i32", "collective_forward"),
        ("all_gather", "", "collective_forward"),
        ("reduce_scatter", "", "collective_forward"),
        ("all_reduce", "", "collective_forward"),
        (
            "send_recv",
            ", #[send_to] a: usize, #[recv_from] b: usize",
            "collective_forward",
        ),
    ] {
        let out = expand(kind, &format!("fn f(comm: &Comm{ranks}, {buffers}) {{}}"));
        assert_eq!(errors(&out), 0, "{kind}: {out}");
        assert!(out.contains(body), "{kind}: {out}");
        assert!(
            out.contains(&format!("Collective :: {kind} (comm")),
            "{kind}: {out}"
        );
        assert!(out.contains("CollectiveTape"), "{kind}: {out}");
        for name in ["fn f_forward", "fn f_augmented_primal", "fn f_reverse"] {
            assert!(out.contains(name), "{kind}: missing {name} in {out}");
        }
    }
    let out = expand(
        "send",
        "fn f(#[comm] c: &Arc<Comm>, #[peer] p: u32, #[src] x: &CudaSlice<f32>) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains("send_reverse") && !out.contains("__Dst"),
        "{out}"
    );
    let out = expand(
        "recv",
        "fn f(comm: &Comm, #[peer] p: u32, #[dst] y: &mut CudaSlice<f32>) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains("recv_reverse") && !out.contains("__Src"),
        "{out}"
    );
}

#[test]
fn collective_misuse_is_reported_in_one_pass_with_stubs() {
    let out = expand(
        "all_gather, src = device",
        "fn f(#[root] r: usize, #[len] n: usize, #[src] x: &mut [f32], #[dst] y: &CudaSlice<Complex<f32>>) {}",
    );
    // no communicator, a root on all_gather, `#[len]`, `src = device`, host source, mutable
    // source, immutable destination, complex elements.
    assert!(errors(&out) >= 7, "{} errors in {out}", errors(&out));
    assert!(out.contains("fn f_reverse"), "stubs: {out}");
    assert!(out.contains("CollectiveTape"), "collective stubs: {out}");
}

#[test]
fn array_rules_place_the_array_side_by_its_origin() {
    let out = expand(
        "copy3d",
        "fn up(s: &CudaStream, #[dst] a: &mut CudaArray<f32>, #[dst_x] x: usize, #[dst_y] y: usize, \
         #[dst_z] z: usize, #[src] h: &[f32], #[src_pitch] sp: usize, #[src_slice_height] sr: usize, \
         #[width] w: usize, #[height] hh: usize, #[depth] d: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(out.contains(". dst_in_array (x , y , z)"), "{out}");
    assert!(!out.contains("src_in_array"), "{out}");
    assert!(out.contains("ShadowMemory < Elem = f32 >"), "{out}");
    let out = expand(
        "copy2d",
        "fn down(s: &CudaStream, #[dst] h: &mut CudaSlice<f32>, #[dst_pitch] dp: usize, \
         #[src] a: &CudaArray<f32>, #[src_x] x: usize, #[src_y] y: usize, #[width] w: usize, #[height] hh: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(out.contains(". src_in_array (x , y , 0usize)"), "{out}");
    // A whole-array copy is a region rule over whole buffers.
    let out = expand(
        "copy",
        "fn up(s: &CudaStream, #[dst] a: &mut CudaArray<f32>, #[src] h: &[f32]) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains("region_forward") && out.contains("Boxes :: WHOLE"),
        "{out}"
    );
}
