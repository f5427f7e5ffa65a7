//! The `autodiff` option: the bridges for `std::autodiff`, inside the runtime's `if_autodiff!`.

use super::{errors, expand};

const UPLOAD: &str = "unsafe fn up(stream: &CudaStream, #[dst] d: *mut f32, #[src] s: *const f32, #[len] n: usize) {}";

#[test]
fn a_pointer_copy_gets_its_bridges_inside_if_autodiff() {
    let out = expand("copy, dst = device, src = host, autodiff", UPLOAD);
    assert_eq!(errors(&out), 0, "{out}");
    for piece in [
        ":: rules_runtime :: __private :: if_autodiff ! {",
        "unsafe extern \"C\" fn rules_ad_up_f32 (",
        "fn rules_ad_up_f32_aug (",
        "fn rules_ad_up_f32_rev (",
        "fn rules_ad_up_f32_fwd (",
        "static __enzyme_register_gradient_rules_ad_up_f32 :",
        "static __enzyme_register_derivative_rules_ad_up_f32 :",
        "fn up_ad (d : & :: rules_runtime :: autodiff :: AdBuf < f32 > , s : & [f32] , n : usize)",
        // The stream comes from the handles, not from an argument.
        "up_rule (& * * __s . get () ? , __a_n)",
    ] {
        assert!(out.contains(piece), "missing {piece} in {out}");
    }
    assert!(!out.contains("__a_stream"), "{out}");
}

#[test]
fn without_the_feature_the_safe_function_stands_in_with_a_bound_that_names_it() {
    let out = expand("copy, dst = device, src = host, autodiff", UPLOAD);
    let piece = "} else { # [doc (hidden)] # [allow (dead_code , clippy :: too_many_arguments)] fn up_ad (_ : impl :: rules_runtime :: __private :: NeedsAutodiffFeature , _ : impl :: core :: marker :: Sized , _ : impl :: core :: marker :: Sized) { } }";
    assert!(out.contains(piece), "missing {piece} in {out}");
}

#[test]
fn without_the_option_there_is_no_bridge() {
    let out = expand("copy, dst = device, src = host", UPLOAD);
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        !out.contains("if_autodiff") && !out.contains("rules_ad_"),
        "{out}"
    );
}

#[test]
fn a_generic_rule_gets_one_set_per_listed_element() {
    let out = expand(
        "copy, dst = host, src = host, autodiff(f32, half::f16)",
        "unsafe fn cp<T: Differentiable>(#[dst] d: *mut T, #[src] s: *const T, #[len] n: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for piece in [
        "fn rules_ad_cp_f32 (",
        "fn rules_ad_cp_f16 (",
        "fn cp_ad_f32 (d : & mut [f32] , s : & [f32] , n : usize)",
        "fn cp_ad_f16 (d : & mut [half :: f16] , s : & [half :: f16] , n : usize)",
    ] {
        assert!(out.contains(piece), "missing {piece} in {out}");
    }
}

#[test]
fn misuse_is_one_error_at_the_option() {
    for (args, item) in [
        (
            "copy, dst = host, src = host, autodiff",
            "unsafe fn cp<T: Differentiable>(#[dst] d: *mut T, #[src] s: *const T, #[len] n: usize) {}",
        ),
        (
            "copy, dst = host, src = host, autodiff(f32)",
            "unsafe fn cp(#[dst] d: *mut f32, #[src] s: *const f32, #[len] n: usize) {}",
        ),
        (
            "copy, autodiff",
            "fn cp(#[dst] d: &mut [f32], #[src] s: &[f32]) {}",
        ),
        ("memset, autodiff", "fn z(#[dst] d: &mut [f32]) {}"),
    ] {
        let out = expand(args, item);
        assert_eq!(errors(&out), 1, "{args}: {out}");
        assert!(out.contains("autodiff"), "{out}");
    }
}

#[test]
fn a_pitched_copy_is_bridged_through_its_region_rule() {
    let out = expand(
        "copy2d, dst = device, src = host, autodiff",
        "unsafe fn up2(stream: &CudaStream, #[dst] d: *mut f32, #[dst_pitch] dp: usize, #[src] s: *const f32, #[src_pitch] sp: usize, #[width] w: usize, #[height] h: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for piece in [
        "fn rules_ad_up2_f32_aug (",
        "fn up2_ad (d : & :: rules_runtime :: autodiff :: AdBuf < f32 > , dp : usize , s : & [f32] , sp : usize , w : usize , h : usize)",
        // The rule object in the runtime's region wrapper: its boxes say how far each side
        // reaches.
        ":: rules_runtime :: __private :: ad :: Region (up2_rule (& * * __s . get () ? , __a_dp , __a_sp , __a_w , __a_h))",
    ] {
        assert!(out.contains(piece), "missing {piece} in {out}");
    }
}

#[test]
fn a_memset_is_bridged_with_no_source() {
    let out = expand(
        "memset, dst = host, autodiff",
        "unsafe fn z(#[dst] d: *mut f32, #[value] bits: u32, #[dst_pitch] p: usize, #[width] w: usize, #[height] h: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for piece in [
        "fn z_ad (d : & mut [f32] , bits : u32 , p : usize , w : usize , h : usize)",
        ":: rules_runtime :: __private :: ad :: Memset (z_rule (__a_bits , __a_p , __a_w , __a_h))",
        ":: rules_runtime :: __private :: ad :: Side :: Absent",
    ] {
        assert!(out.contains(piece), "missing {piece} in {out}");
    }
}

#[test]
fn kinds_without_a_bridge_are_refused_with_the_reason() {
    for (args, item, why) in [
        (
            "copy2d, autodiff",
            "fn a(stream: &Arc<CudaStream>, #[dst] d: &mut CudaArray<f32>, #[dst_x] x: usize, #[dst_y] y: usize, #[src] s: &CudaSlice<f32>, #[src_pitch] sp: usize, #[width] w: usize, #[height] h: usize) {}",
            "`CudaSlice<f32>` is none of them",
        ),
        (
            "all_reduce, autodiff",
            "fn s(comm: &Comm, #[dst] y: &mut CudaSlice<f32>, #[src] x: &CudaSlice<f32>) {}",
            "ordered by a communicator",
        ),
    ] {
        let out = expand(args, item);
        assert_eq!(errors(&out), 1, "{args}: {out}");
        assert!(out.contains(why), "{args}: {out}");
    }
}

#[test]
fn an_array_rule_is_bridged_with_handles_and_its_linear_side_as_a_raw_shadow() {
    let out = expand(
        "copy2d, autodiff(f32, f64)",
        "fn to_arr<T: ArrayElement, L: Linear<Elem = T> + ?Sized>(stream: &Arc<CudaStream>, #[dst] d: &mut CudaArray<T>, #[dst_x] x: usize, #[dst_y] y: usize, #[src] s: &L, #[src_pitch] sp: usize, #[width] w: usize, #[height] h: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for piece in [
        "fn to_arr_ad_f64 (d : & :: rules_runtime :: autodiff :: AdArray < f64 > , x : usize , y : usize , s : & :: rules_runtime :: autodiff :: AdBuf < f64 > , sp : usize , w : usize , h : usize)",
        ":: rules_runtime :: __private :: ad :: RefRegion (to_arr_rule (__s . get () ? , __a_x , __a_y , __a_sp , __a_w , __a_h))",
        ":: rules_runtime :: __private :: ad :: array_aug (\"to_arr\"",
        ":: rules_runtime :: __private :: ad :: ArraySide (__a_d , __d_d)",
        ":: core :: option :: Option :: Some (:: rules_runtime :: __private :: ad :: BufSide (__a_s , __d_s))",
    ] {
        assert!(out.contains(piece), "missing {piece} in {out}");
    }
    // A memset of an array has no source; a pageable slice side is a `SliceSide`.
    let out = expand(
        "memset, autodiff",
        "fn z(stream: &CudaStream, #[dst] d: &mut CudaArray<f32>) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(out.contains(":: core :: option :: Option :: None :: < :: rules_runtime :: __private :: ad :: ArraySide < f32 >>"), "{out}");
    let out = expand(
        "copy, autodiff",
        "fn dl(stream: &CudaStream, #[dst] d: &mut [f32], #[src] s: &CudaArray<f32>) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains(
            ":: rules_runtime :: __private :: ad :: SliceSide (__a_d , __a_d_len , __d_d)"
        ),
        "{out}"
    );
}

#[test]
fn a_fill_takes_its_value_without_a_reverse_slot_and_returns_its_derivative() {
    let out = expand(
        "fill, dst = host, autodiff",
        "unsafe fn f(#[dst] d: *mut f32, #[len] n: usize, #[value] v: f32) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for piece in [
        "fn f_ad (d : & mut [f32] , n : usize , v : f32)",
        // Reverse mode: no shadow slot after the value; the augmented primal returns nothing (it
        // saves its tape with the arguments but the value), and the reverse returns d_v.
        "fn rules_ad_f_f32_aug (__a_d : * mut f32 , __d_d : * mut f32 , __a_d_len : usize , __d_d_len : usize , __a_n : usize , __d_n : usize , __a_v : f32) {",
        "fn rules_ad_f_f32_rev (__a_d : * mut f32 , __d_d : * mut f32 , __a_d_len : usize , __d_d_len : usize , __a_n : usize , __d_n : usize , __a_v : f32) -> f32",
        "struct rules_ad_f_f32_args { __a_d : * mut f32 , __a_d_len : usize , __a_n : usize }",
        ":: rules_runtime :: __private :: ad :: save (rules_ad_f_f32_args { __a_d , __a_d_len , __a_n } , rules_ad_f_f32_args { __a_d : __d_d , __a_d_len : __d_d_len , __a_n : __d_n } , __tape)",
        // Forward mode: the value's tangent in its slot.
        "fn rules_ad_f_f32_fwd (__a_d : * mut f32 , __d_d : * mut f32 , __a_d_len : usize , __d_d_len : usize , __a_n : usize , __d_n : usize , __a_v : f32 , __d_v : f32)",
        ":: rules_runtime :: __private :: ad :: fill_fwd (\"f\" ,",
        ":: rules_runtime :: __private :: ad :: Fill (f_rule (__a_n))",
    ] {
        assert!(out.contains(piece), "missing {piece} in {out}");
    }
}
