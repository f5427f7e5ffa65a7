//! What the expansion contains: one rule item next to the primal (a struct of its other
//! arguments and the impl of the kind's rule trait), runtime paths, the plan of each kind, and the
//! fallback on error.

use super::{errors, expand};

#[test]
fn a_good_rule_expands_to_a_rule_struct_and_its_trait_impl() {
    let out = expand(
        "copy",
        "pub fn copy_into(#[dst] dst: &mut [f32], #[src] src: &[f32], #[inert] n: usize) { dst.copy_from_slice(src) }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for piece in [
        "fn copy_into (",
        "pub struct copy_into_rule (pub usize) ;",
        ":: rules_runtime :: __private :: CopyRule < 'static , [f32] , [f32] > for copy_into_rule",
        "fn __primal (& mut self , __d : & mut [f32] , __s : & [f32])",
        "copy_into (__d , __s , self . 0)",
    ] {
        assert!(out.contains(piece), "missing {piece} in {out}");
    }
    // No generic function of the activities is generated: they are the runtime's.
    assert!(
        !out.contains("__Dst") && !out.contains("fn forward"),
        "{out}"
    );
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
        "fn f(#[dst] d: &mut Vec<T>, #[src] s: &[T], #[inert] x: usize) -> Result<(), E> { Ok(()) }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    // Every runtime item is named in full through the renamed path (no alias, no `const` block).
    assert!(out.contains("impl rt :: __private :: CopyRule <"), "{out}");
    assert!(!out.contains("const _ :"), "{out}");
    assert!(!out.contains("rules_runtime"), "{out}");
    let out = expand(
        "copy, crate = rt, dst = host, src = unified",
        "unsafe fn f(#[dst] d: *mut T, #[src] s: *const T, #[len] n: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(!out.contains("rules_runtime"), "{out}");
    let out = expand(
        "copy, crate = rt, in_impl",
        "fn f(#[dst] d: &mut [f32], #[src] s: &[f32]) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(out.contains("rt :: __private :: InImpl"), "{out}");
    assert!(!out.contains("rules_runtime"), "{out}");
}

#[test]
fn collective_rules_plan_their_collective() {
    let buffers = "#[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>";
    for (kind, ranks) in [
        ("broadcast", ", #[root] r: usize"),
        ("reduce", ", #[root] r: i32"),
        ("all_gather", ""),
        ("reduce_scatter", ""),
        ("all_reduce", ""),
        ("send_recv", ", #[send_to] a: usize, #[recv_from] b: usize"),
    ] {
        let out = expand(kind, &format!("fn f(comm: &Comm{ranks}, {buffers}) {{}}"));
        assert_eq!(errors(&out), 0, "{kind}: {out}");
        assert!(
            out.contains(":: rules_runtime :: __private :: CollectiveRule < '_1"),
            "{kind}: {out}"
        );
        assert!(
            out.contains(&format!("Collective :: {kind} (self . 0")),
            "{kind}: {out}"
        );
    }
    let out = expand(
        "send",
        "fn f(#[comm] c: &Arc<Comm>, #[peer] p: u32, #[src] x: &CudaSlice<f32>) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains(":: rules_runtime :: __private :: SendRule <"),
        "{out}"
    );
    let out = expand(
        "recv",
        "fn f(comm: &Comm, #[peer] p: u32, #[dst] y: &mut CudaSlice<f32>) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains(":: rules_runtime :: __private :: RecvRule <"),
        "{out}"
    );
}

#[test]
fn on_error_the_function_and_a_stand_in_are_emitted() {
    let out = expand(
        "all_gather, src = device",
        "fn f(#[root] r: usize, #[len] n: usize, #[src] x: &mut [f32], #[dst] y: &CudaSlice<Complex<f32>>) {}",
    );
    // no communicator, a root on all_gather, `#[len]`, `src = device`, host source, mutable
    // source, immutable destination, complex elements.
    assert!(errors(&out) >= 7, "{} errors in {out}", errors(&out));
    assert!(out.contains("fn f_rule"), "stand-in: {out}");
    assert!(out.contains("RuleStub2"), "stand-in: {out}");
    let out = expand("memset", "fn f(#[dst] d: &[f32], x: u8) {}");
    assert!(out.contains("RuleStub1"), "one activity: {out}");
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
    assert!(
        out.contains(". dst_in_array (self . 1 , self . 2 , self . 3)"),
        "{out}"
    );
    assert!(!out.contains("src_in_array"), "{out}");
    assert!(out.contains("ShadowMemory < Elem = f32 >"), "{out}");
    let out = expand(
        "copy2d",
        "fn down(s: &CudaStream, #[dst] h: &mut CudaSlice<f32>, #[dst_pitch] dp: usize, \
         #[src] a: &CudaArray<f32>, #[src_x] x: usize, #[src_y] y: usize, #[width] w: usize, #[height] hh: usize) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains(". src_in_array (self . 2 , self . 3 , 0usize)"),
        "{out}"
    );
    // A whole-array copy is a region rule over whole buffers.
    let out = expand(
        "copy",
        "fn up(s: &CudaStream, #[dst] a: &mut CudaArray<f32>, #[src] h: &[f32]) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains(":: rules_runtime :: __private :: RegionRule <")
            && out.contains("Boxes :: WHOLE"),
        "{out}"
    );
}

#[test]
fn cfg_parameters_and_unnamed_generics_get_named_fields_and_a_constructor() {
    let out = expand(
        "copy",
        "fn f(#[dst] d: &mut [f32], #[src] s: &[f32], #[cfg(test)] #[inert] n: usize, #[inert] k: u8) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(
        out.contains("pub struct f_rule") || out.contains("struct f_rule {"),
        "{out}"
    );
    assert!(out.contains("# [cfg (test)] n : usize"), "{out}");
    assert!(
        out.contains("fn f_rule (# [cfg (test)] n : usize , k : u8)"),
        "{out}"
    );
    let out = expand(
        "copy",
        "fn f<E: Error>(#[dst] d: &mut [f32], #[src] s: &[f32]) -> Result<(), E> { Ok(()) }",
    );
    assert_eq!(errors(&out), 0, "{out}");
    assert!(out.contains("PhantomData < fn () -> (E ,) >"), "{out}");
}

#[test]
fn an_unsafe_slice_rule_keeps_its_arguments_out_of_the_defining_modules_reach() {
    // The struct's one field holds every argument in `UnsafeArgs` (made and reached only by
    // `unsafe` code), so that the user's module, which sees the field, can neither build the
    // rule object with a struct literal nor change an argument without `unsafe`.
    let out = expand(
        "copy2d",
        "pub unsafe fn f<T: Copy>(s: &CudaStream, #[dst] d: &mut CudaSlice<f32>, #[dst_pitch] dp: usize, \
         #[src] x: &CudaSlice<f32>, #[src_pitch] sp: usize, #[width] w: usize, #[height] h: usize, \
         #[cfg(test)] #[inert] tag: u8, #[inert] scratch: &mut Vec<T>) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    for piece in [
        "pub struct f_rule < '_1 , '_2 , T : Copy > { __args : :: rules_runtime :: __private :: UnsafeArgs < __f_rule_args < '_1 , '_2 , T > > }",
        "struct __f_rule_args < '_1 , '_2 , T : Copy > { s : & '_1 CudaStream ,",
        "# [cfg (test)] tag : u8 ,",
        "pub unsafe fn f_rule < '_1 , '_2 , T : Copy > (",
        "__args : unsafe { :: rules_runtime :: __private :: UnsafeArgs :: new (__f_rule_args {",
        // The plan reads the arguments; the primal's call reborrows the `&mut` one.
        "fn __plan (& self) -> (:: rules_runtime :: __private :: On < '_1 > , :: rules_runtime :: __private :: Boxes , bool) { let __a = unsafe { :: rules_runtime :: __private :: UnsafeArgs :: get (& self . __args) } ;",
        "let __a = unsafe { :: rules_runtime :: __private :: UnsafeArgs :: get_mut (& mut self . __args) } ;",
        "& mut * __a . scratch",
        ":: rules_runtime :: __private :: On :: stream (__a . s)",
    ] {
        assert!(out.contains(piece), "missing {piece} in {out}");
    }
    assert!(
        !out.contains("pub s :") && !out.contains("self . s"),
        "{out}"
    );
    // A rule without other arguments is sealed too: a literal would otherwise need no field.
    let out = expand(
        "copy",
        "unsafe fn g(#[dst] d: &mut [f32], #[src] x: &[f32]) {}",
    );
    assert!(
        out.contains("struct g_rule { __args : :: rules_runtime :: __private :: UnsafeArgs < __g_rule_args > }"),
        "{out}"
    );
    // A safe primal's rule keeps its public tuple fields.
    let out = expand(
        "copy",
        "pub fn h(#[dst] d: &mut [f32], #[src] x: &[f32], #[inert] n: usize) {}",
    );
    assert!(out.contains("pub struct h_rule (pub usize) ;"), "{out}");
}

#[test]
fn a_stream_behind_an_alias_orders_the_shadow_work() {
    // `type Stream = Arc<CudaStream>`: the macro cannot read the alias, so the one parameter it
    // cannot read is the stream (and the compiler checks it at its type); before, it was left
    // out and the shadow work ran on each buffer's own stream.
    let out = expand(
        "copy",
        "fn up(stream: &Stream, #[dst] d: &mut CudaSlice<f32>, #[src] s: &[f32]) {}",
    );
    assert!(out.contains("On :: stream (self . 0)"), "{out}");
    assert!(!out.contains("On :: Host"), "{out}");
}

#[test]
fn a_parameters_doc_comment_moves_to_the_rule_item() {
    let out = expand(
        "copy",
        "fn up(/// the stream\n stream: &CudaStream, #[dst] d: &mut [f32], #[src] s: &[f32]) {}",
    );
    assert!(out.contains("- `stream`: the stream"), "{out}");
    assert!(!out.contains("stream : & CudaStream , # [doc"), "{out}");
    assert!(!out.contains("# [doc = \" the stream\"] stream"), "{out}");
}

#[test]
fn every_rule_names_its_primitive_and_parameters_for_the_checked_mode() {
    let out = expand(
        "copy",
        "fn upload(#[dst] out: &mut [f32], #[src] input: &[f32]) {}",
    );
    assert_eq!(errors(&out), 0, "{out}");
    // Packed in one literal, `rule\0dst\0src` (`RuleNames::unpack`).
    let names = "const __NAMES : & 'static str = \"upload\\0out\\0input\" ;";
    assert!(out.contains(names), "{out}");
    let out = expand("fill", "fn put(#[dst] buf: &mut [f32], #[value] v: f32) {}");
    assert!(out.contains("\"put\\0buf\\0v\""), "{out}");
    let out = expand("memset", "fn clear(#[dst] buf: &mut [f32]) {}");
    assert!(out.contains("\"clear\\0buf\\0\""), "{out}");
    let out = expand(
        "copy, in_impl",
        "fn f(#[dst] d: &mut [f32], #[src] s: &[f32]) {}",
    );
    assert!(out.contains(". __named (\"f\\0d\\0s\")"), "{out}");
}
