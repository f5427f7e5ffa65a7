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
  1  cudarc buffers with a stream parameter (found by type, or marked #[stream])
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
        f"pub fn {name}(calls: &Cell<usize>, @dst dst: &mut [{t}], @src src: &[{t}], chunk: usize)",
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
                    f"pub fn {name}(stream: &Arc<CudaStream>, @dst dst: &mut CudaViewMut<'_, {t}>, @src src: &CudaView<'_, {t}>) {ret}",
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
# Generated by tools/build-cost/gen.py. Its own workspace, outside /work/main's.
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


def ablate(out):
    """Variants of the `expanded` crate, edited as text, to see what the generated code costs:
    x-nodocs (without the generated functions' documentation), x-forward (only the primal and its
    forward rule: one generated function a rule instead of three). The expansion is written one
    rule a line, the primal first."""
    src = open(os.path.join(out, "expanded", "src", "lib.rs")).read()
    toml = open(os.path.join(out, "expanded", "Cargo.toml")).read()
    head, _, rules = src.partition("\nuse std::sync::Arc;\n")
    head += "\nuse std::sync::Arc;\n"

    def forward_only(line):
        cut = line.find('# [doc = "Augmented primal')
        return line if cut < 0 else line[:cut]

    variants = {
        "x-nodocs": re.sub(GENERATED_DOC, "", rules),
        "x-forward": "\n".join(forward_only(l) for l in rules.split("\n")),
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
