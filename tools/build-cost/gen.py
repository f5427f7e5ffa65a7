#!/usr/bin/env python3
"""Generates the throwaway crates measured by run.sh (see run.sh for the whole story).

    gen.py OUT_DIR RUNTIME_DIR [N [FAMILIES [MACRO_OPT]]]
    gen.py --ablate OUT_DIR      (after run.sh's expansion step; see ablate())

writes OUT_DIR/annotated and OUT_DIR/plain: each a library crate with N copy functions (default
200), the same bodies; `annotated` carries `#[derivative_rule(...)]` and the role attributes
(`#[dst]`, `#[src]`, `#[stream]`, `#[dst_offset]`, `#[src_offset]`, `#[len]`), `plain` carries none.
Both depend on the rules-runtime at RUNTIME_DIR (by path) and on half / num-complex, and are their
own workspaces. Also OUT_DIR/rules.txt (the annotated rules, as the macro receives them) and
OUT_DIR/expanded (only a header, for run.sh's expansion step). Forms are the ones of ui-tests/pass/*.rs and tests/tests/*.rs, in four families
cycled i % 4:

  0  host slice rules: [T], Vec<T>, [T; 4], Vec <- slice, fallible, pass-through arguments
     (#[inert]: a counter and a chunk size that changes neither which elements are written nor
     their values)
  1  cudarc buffers with a stream parameter (found by type, or marked #[stream]); the view-to-view
     copy takes a CudaViewMut source (a read-only CudaView source is refused where the rule is defined)
  2  unsafe raw device pointers, dst = device, src = device, #[dst_offset]/#[src_offset]/#[len]
  3  raw pointers in host-accessible kinds (host, pinned, unified), unsafe and safe primals

Element types cycle through f32, f64, f16, bf16, Complex32, Complex64 (device buffers moved by
cudarc's memcpy take only the first four).

FAMILIES (default "0,1,2,3") restricts the cycle to some families, to see which shape costs most.
MACRO_OPT, if given, writes `[profile.*.build-override] opt-level = MACRO_OPT` into both crates
(cargo's default compiles proc macros and syn unoptimized, in release builds too).
"""

import os
import re
import sys

ELEMS = ["f32", "f64", "f16", "bf16", "Complex32", "Complex64"]
DEVICE_ELEMS = ["f32", "f64", "f16", "bf16"]  # cudarc's DeviceRepr
HOST_KINDS = [("host", "host"), ("unified", "pinned"), ("pinned", "host"), ("host", "unified")]


def rule(attr, sig, body, annotated):
    """One function. `sig` holds role markers `@dst `, `@src `, ... that become `#[dst] ` or ''."""
    if annotated:
        sig = re.sub(r"@(\w+) ", r"#[\1] ", sig)
        head = f"#[derivative_rule({attr})]\n"
    else:
        sig = re.sub(r"@(\w+) ", "", sig)
        head = ""
    return f"{head}{sig} {{\n{body}\n}}\n"


def family0(i, k, a):
    v, t = k % 6, ELEMS[(k // 6) % 6]
    name = f"host_{i}"
    if v == 0:
        return rule("copy", f"pub fn {name}(@dst dst: &mut [{t}], @src src: &[{t}])",
                    "    dst.copy_from_slice(src);", a)
    if v == 1:
        return rule("copy", f"pub fn {name}(@dst dst: &mut Vec<{t}>, @src src: &Vec<{t}>)",
                    "    dst.copy_from_slice(src);", a)
    if v == 2:
        return rule("copy", f"pub fn {name}(@dst dst: &mut [{t}; 4], @src src: &[{t}; 4])",
                    "    *dst = *src;", a)
    if v == 3:
        return rule("copy", f"pub fn {name}(@dst dst: &mut Vec<{t}>, @src src: &[{t}])",
                    "    dst.copy_from_slice(src);", a)
    if v == 4:
        return rule(
            "copy",
            f"pub fn {name}(@dst dst: &mut [{t}], @src src: &[{t}]) -> Result<(), String>",
            "    if dst.len() != src.len() {\n"
            f'        return Err(format!("{name}: {{}} into {{}}", src.len(), dst.len()));\n'
            "    }\n    dst.copy_from_slice(src);\n    Ok(())",
            a,
        )
    return rule(
        "copy",
        f"pub fn {name}(@inert calls: &Cell<usize>, @dst dst: &mut [{t}], @src src: &[{t}], @inert chunk: usize)",
        "    calls.set(calls.get() + 1);\n"
        "    for (d, s) in dst.chunks_mut(chunk.max(1)).zip(src.chunks(chunk.max(1))) {\n"
        "        d.copy_from_slice(s);\n    }",
        a,
    )


def family1(i, k, a):
    v, t = k % 5, DEVICE_ELEMS[(k // 5) % 4]
    name = f"stream_{i}"
    ret = "-> Result<(), DriverError>"
    if v == 0:
        return rule("copy",
                    f"pub fn {name}(stream: &Arc<CudaStream>, @dst dst: &mut CudaSlice<{t}>, @src src: &[{t}]) {ret}",
                    "    stream.memcpy_htod(src, dst)", a)
    if v == 1:
        return rule("copy",
                    f"pub fn {name}(stream: &Arc<CudaStream>, @dst dst: &mut [{t}], @src src: &CudaSlice<{t}>) {ret}",
                    "    stream.memcpy_dtoh(src, dst)", a)
    if v == 2:
        return rule("copy",
                    f"pub fn {name}(@dst dst: &mut CudaSlice<{t}>, @src src: &Vec<{t}>, @stream on: &Arc<CudaStream>) {ret}",
                    "    on.memcpy_htod(src, dst)", a)
    if v == 3:
        return rule("copy",
                    f"pub fn {name}(stream: &Arc<CudaStream>, @dst dst: &mut CudaViewMut<'_, {t}>, @src src: &CudaViewMut<'_, {t}>) {ret}",
                    "    stream.memcpy_dtod(src, dst)", a)
    return rule("copy",
                f"pub fn {name}(stream: &Arc<CudaStream>, @dst dst: &mut PinnedHostSlice<{t}>, @src src: &UnifiedSlice<{t}>) {ret}",
                "    stream.synchronize()?;\n"
                "    dst.as_mut_slice()?.copy_from_slice(src.as_slice()?);\n    Ok(())", a)


def family2(i, k, a):
    v, t = k % 3, ELEMS[(k // 3) % 6]
    name = f"device_{i}"
    ret = "-> Result<(), DriverError>"
    doc = "/// # Safety\n/// Both pointers are device memory valid for `n` elements at their offsets.\n"
    if v == 0:
        params = (f"stream: &CudaStream, @dst dst: *mut {t}, @dst_offset doff: usize, "
                  f"@src src: *const {t}, @src_offset soff: usize, @len n: usize")
        d, s = f"dst as u64 + (doff * size_of::<{t}>()) as u64", f"src as u64 + (soff * size_of::<{t}>()) as u64"
    elif v == 1:
        params = f"stream: &CudaStream, @dst dst: *mut {t}, @dst_offset at: usize, @src src: *const {t}, @len n: usize"
        d, s = f"dst as u64 + (at * size_of::<{t}>()) as u64", "src as u64"
    else:
        params = f"stream: &CudaStream, @dst dst: *mut {t}, @src src: *const {t}, @len n: usize"
        d, s = "dst as u64", "src as u64"
    body = (f"    let (d, s) = ({d}, {s});\n"
            f"    unsafe {{ sys::cuMemcpyDtoDAsync_v2(d, s, n * size_of::<{t}>(), stream.cu_stream()).result() }}")
    return doc + rule("copy, dst = device, src = device", f"pub unsafe fn {name}({params}) {ret}", body, a)


def family3(i, k, a):
    v, t = k % 3, ELEMS[(k // 3) % 6]
    dk, sk = HOST_KINDS[k % 4]
    name = f"hostptr_{i}"
    attr = f"copy, dst = {dk}, src = {sk}"
    doc = "/// # Safety\n/// Both pointers are valid for `n` elements at their offsets.\n"
    if v == 0:
        return doc + rule(attr, f"pub unsafe fn {name}(@dst dst: *mut {t}, @src src: *const {t}, @len n: usize)",
                          "    unsafe { core::ptr::copy_nonoverlapping(src, dst, n) }", a)
    if v == 1:
        return doc + rule(
            attr,
            f"pub unsafe fn {name}(@dst dst: *mut {t}, @dst_offset at: usize, @src src: *const {t}, "
            f"@src_offset from: usize, @len n: usize)",
            "    unsafe { core::ptr::copy_nonoverlapping(src.add(from), dst.add(at), n) }", a)
    # A safe primal over raw pointers (its rules are unsafe).
    return rule(
        attr,
        f"pub fn {name}(@dst dst: *mut {t}, @src src: *const {t}, @dst_offset at: usize, @len n: usize)",
        "    if !dst.is_null() && !src.is_null() {\n"
        "        unsafe { core::ptr::copy_nonoverlapping(src, dst.add(at), n) }\n    }", a)


ALL_FAMILIES = [family0, family1, family2, family3]

HEADER = """\
//! Generated by tools/build-cost/gen.py ({what}): {n} copy functions. Throwaway, do not edit.
#![allow(unused_imports, clippy::all, clippy::missing_safety_doc)]

{use_attr}use half::{{bf16, f16}};
use num_complex::{{Complex32, Complex64}};
use rules_runtime::cudarc::driver::{{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DriverError, PinnedHostSlice, UnifiedSlice, sys,
}};
use std::cell::Cell;
use std::sync::Arc;

"""


def crate(out, pkg, runtime, macro_opt, what, use_attr, items, n):
    src = os.path.join(out, pkg, "src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(out, pkg, "Cargo.toml"), "w") as f:
        f.write(f"""\
# Generated by tools/build-cost/gen.py. Its own workspace, outside the project's.
[package]
name = "build-cost-{pkg}"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
rules-runtime = {{ path = "{runtime}" }}
half = "2"
num-complex = "0.4"

[workspace]
""")
        if macro_opt:
            for prof in ("dev", "release"):
                f.write(f"\n[profile.{prof}.build-override]\nopt-level = {macro_opt}\n")
    body = HEADER.format(what=what, n=n, use_attr=use_attr)
    with open(os.path.join(src, "lib.rs"), "w") as f:
        f.write(body + "\n".join(items))


GENERATED_DOC = r'# \[doc = "(?:Forward-mode|Augmented primal|Reverse rule)(?:[^"\\]|\\.)*"\] '


P = ":: rules_runtime :: __private :: "

# x-bounds: one helper trait per argument family, defined in the generated crate (the runtime is
# not changed). Its supertrait carries `DstArg<X>` and, as an associated-type bound (implied at
# use sites, unlike a plain `where` clause on a trait), the `SameWidth` bound; the blanket impl
# also holds the ShadowMemory/SameElem bounds. A rule then needs `__Src: SrcArg<Y>` (the trait's
# parameter bound must hold for its where clause to be well-formed) and `__Dst: __CopyDst<X, Y,
# __Src>`: two predicates instead of three to six.
BOUNDS_HEADER = """
use rules_runtime::__private::{Activity as __Act, DstArg as __DA, DstPtr as __DP, SameWidth as __SW,
    ShadowMemory as __SM, SrcArg as __SA, SrcPtr as __SP};
#[doc(hidden)]
pub trait __CopyDst<X: ?Sized, Y: ?Sized, S: __SA<Y>>: __DA<X, Width: __SW<<S as __Act>::Width>> {}
impl<X, Y, S, D> __CopyDst<X, Y, S> for D
where
    X: __SM + ?Sized,
    Y: __SM<Elem = X::Elem> + ?Sized,
    S: __SA<Y>,
    D: __DA<X, Width: __SW<S::Width>>,
{
}
#[doc(hidden)]
pub trait __CopyDstPtr<T, S: __SP<T>>: __DP<T, Width: __SW<<S as __Act>::Width>> {}
impl<T, S: __SP<T>, D: __DP<T, Width: __SW<S::Width>>> __CopyDstPtr<T, S> for D {}
"""


def split_top(text, sep=" , "):
    """Splits token text at `sep` outside <...> and (...)."""
    parts, cur = [], ""
    for tok in text.split(sep):
        cur = tok if not cur else cur + sep + tok
        depth = cur.count("<") - cur.count(">") + cur.count("(") - cur.count(")")
        if depth == 0:
            parts.append(cur)
            cur = ""
    assert not cur, text
    return parts


def fold_bounds(rules):
    def fold(m):
        preds = [x for x in split_top(m.group(1).strip().removesuffix(" ,")) if x.strip()]
        dst = src = None
        keep = []
        for pr in preds:
            d = re.fullmatch(r"__Dst : " + P + r"(DstArg|DstPtr) < (.*) >", pr)
            s = re.fullmatch(r"__Src : " + P + r"(SrcArg|SrcPtr) < (.*) >", pr)
            if d:
                dst = d.groups()
            elif s:
                src = s.groups()
            elif pr.startswith("< __Dst as ") and (P + "SameWidth") in pr:
                pass
            elif re.search(r" : " + P + r"(ShadowMemory|SameElem)\b", pr):
                pass
            else:
                keep.append(pr)
        assert dst and src, m.group(0)[:300]
        if dst[0] == "DstArg":
            new = [f"__Src : {P}SrcArg < {src[1]} >", f"__Dst : __CopyDst < {dst[1]} , {src[1]} , __Src >"]
        else:
            assert dst[1] == src[1], m.group(0)[:300]
            new = [f"__Src : {P}SrcPtr < {src[1]} >", f"__Dst : __CopyDstPtr < {dst[1]} , __Src >"]
        return "where " + " , ".join(new + keep) + " , {"

    out, k = re.subn(r"where (__Dst : .*?) \{", fold, rules)
    assert k > 0
    return out


# x-fnitem: the closure handed to copy_forward / copy_augmented_primal / ptr_copy_* becomes the
# primal's fn item when the primal is safe and takes exactly (dst, src); otherwise a call of a
# shared generic helper (one per argument shape, defined in the crate header, one closure each)
# that binds the captured and pass-through arguments. Unsafe primals go through a fn pointer
# (unsafe fn items implement no Fn trait).
CLOSURE = re.compile(r"\| __d : (.*?) , __s : (.*?) \| (unsafe \{ )?(\w+) \(")


def fn_items(rules):
    helpers = {}
    out, last = [], 0
    for m in CLOSURE.finditer(rules):
        j = start = m.end()
        depth = 1
        while depth:
            depth += {"(": 1, ")": -1}.get(rules[j], 0)
            j += 1
        args = split_top(rules[start:j - 1].strip())
        end = j
        unsafe = bool(m.group(3))
        if unsafe:
            assert rules[j:j + 2] == " }"
            end = j + 2
        ptr = m.group(1).startswith("* mut")
        shape = tuple("d" if a == "__d" else "s" if a == "__s" else
                      "p" if a.startswith(P + "pass_through (& ") else "c" for a in args)
        name = m.group(4)
        if shape == ("d", "s") and not unsafe:
            repl = name
        else:
            key = (unsafe, ptr, shape)
            h = helpers.setdefault(key, f"__bind{len(helpers)}")
            bound = [re.fullmatch(P + r"pass_through \(& (.*)\)", a).group(1) if a.startswith(P) else a
                     for a in args if a not in ("__d", "__s")]
            repl = f"{h} ({name} , " + " , ".join(bound) + ")"
        out.append(rules[last:m.start()] + repl)
        last = end
    out.append(rules[last:])
    defs = []
    for (unsafe, ptr, shape), h in helpers.items():
        extra = [(f"a{i}", f"A{i}", "Copy" if c == "c" else "::rules_runtime::__private::PassThrough")
                 for i, c in enumerate(x for x in shape if x in "cp")]
        it = iter(extra)
        d_ty, s_ty = ("*mut T", "*const T") if ptr else ("&mut X", "&Y")
        call_tys = [d_ty if c == "d" else s_ty if c == "s" else next(it)[1] for c in shape]
        it = iter(extra)
        call_args = ["d" if c == "d" else "s" if c == "s" else next(it)[0] for c in shape]
        tparams = (["T"] if ptr else ["X: ?Sized", "Y: ?Sized"]) + ["R"] + [f"{t}: {b}" for _, t, b in extra]
        params = ", ".join(f"{a}: {t}" for a, t, _ in extra)
        ret = f"impl FnMut({d_ty}, {s_ty}) -> R"
        call = f"f({', '.join(call_args)})"
        if unsafe:
            defs.append(f"#[doc(hidden)] #[inline] pub unsafe fn {h}<{', '.join(tparams)}>"
                        f"(f: unsafe fn({', '.join(call_tys)}) -> R, {params}) -> {ret} "
                        f"{{ move |d: {d_ty}, s: {s_ty}| unsafe {{ {call} }} }}")
        else:
            defs.append(f"#[doc(hidden)] #[inline] pub fn {h}<F, {', '.join(tparams)}>(f: F, {params}) -> {ret} "
                        f"where F: Fn({', '.join(call_tys)}) -> R {{ move |d: {d_ty}, s: {s_ty}| {call} }}")
    return "".join(out), "\n" + "\n".join(defs) + "\n"


def ablate(out):
    """Variants of the `expanded` crate, edited as text, to see what the generated code costs:
    x-nodocs (without the generated functions' documentation), x-forward (only the primal and its
    forward rule: one generated function a rule instead of three); then x-bounds (activity
    bounds folded into two predicates a function, fold_bounds), x-fnitem (the primal passed as a fn
    item or through a shared helper instead of a closure per rule, fn_items), x-min (x-bounds +
    x-fnitem + x-nodocs). The expansion is written one rule a line, the primal first."""
    src = open(os.path.join(out, "expanded", "src", "lib.rs")).read()
    toml = open(os.path.join(out, "expanded", "Cargo.toml")).read()
    head, _, rules = src.partition("\nuse std::sync::Arc;\n")
    head += "\nuse std::sync::Arc;\n"

    def forward_only(line):
        cut = line.find('# [doc = "Augmented primal')
        return line if cut < 0 else line[:cut]

    fn_rules, fn_defs = fn_items(rules)
    min_rules, min_defs = fn_items(fold_bounds(re.sub(GENERATED_DOC, "", rules)))
    variants = {
        "x-nodocs": re.sub(GENERATED_DOC, "", rules),
        "x-forward": "\n".join(forward_only(l) for l in rules.split("\n")),
        "x-bounds": BOUNDS_HEADER + fold_bounds(rules),
        "x-fnitem": fn_defs + fn_rules,
        "x-min": BOUNDS_HEADER + min_defs + min_rules,
    }
    for name, body in variants.items():
        os.makedirs(os.path.join(out, name, "src"), exist_ok=True)
        with open(os.path.join(out, name, "Cargo.toml"), "w") as f:
            f.write(toml.replace('name = "build-cost-expanded"', f'name = "build-cost-{name}"'))
        with open(os.path.join(out, name, "src", "lib.rs"), "w") as f:
            f.write(head + body)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--ablate"]:
        return ablate(args[1])
    if not 2 <= len(args) <= 5:
        sys.exit(__doc__)
    out, runtime = args[0], os.path.abspath(args[1])
    n = int(args[2]) if len(args) > 2 else 200
    families = [int(x) for x in (args[3] if len(args) > 3 else "0,1,2,3").split(",")]
    macro_opt = args[4] if len(args) > 4 else ""
    m = len(families)

    def items(annotated):
        return [ALL_FAMILIES[families[i % m]](i, i // m, annotated) for i in range(n)]

    annotated = items(True)
    crate(out, "annotated", runtime, macro_opt, "annotated",
          "use rules_runtime::derivative_rule;\n", annotated, n)
    crate(out, "plain", runtime, macro_opt, "plain: the same bodies, no attributes", "",
          items(False), n)
    # For run.sh's EXPAND step: the rules as the macro receives them, "@@ ATTR" then the item,
    # and a crate holding only the header, to which expand_rules.rs appends the expansions.
    with open(os.path.join(out, "rules.txt"), "w") as f:
        for text in annotated:
            attr = re.search(r"^#\[derivative_rule\((.*)\)\]\n", text, re.M)
            f.write(f"@@ {attr.group(1)}\n{text[:attr.start()]}{text[attr.end():]}")
    crate(out, "expanded", runtime, macro_opt,
          "the annotated crate's rules as expanded by rules-macro's code, outside rustc", "", [], n)


if __name__ == "__main__":
    main()
