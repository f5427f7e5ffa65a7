#!/usr/bin/env bash
# Builds the workspace's test, bench and example executables (no GPU needed to build) and gathers
# them in .gpu-bin/, so that a GPU machine without a Rust toolchain can run them as they are:
#
#   tools/gpu-bins.sh [extra cargo args]      # default: --workspace --features rules-runtime/testing
# (not --all-features: the CUDA version features of rules-runtime are exclusive, one per build)
#
# Names: test-<target>, bench-<target>, example-<target> (e.g. .gpu-bin/test-gpu,
# .gpu-bin/bench-shadow_ops, .gpu-bin/example-round_trip), and by default also
# test-autodiff-rules_runtime (the runtime's unit tests with its `autodiff` feature: the
# std::autodiff bridges' tests). Then, on the GPU machine:
#   tools/gpu-suite.sh tests | sanitize | bench
# or a single binary, e.g. `.gpu-bin/test-gpu --include-ignored`.
#
# Anything that needs cargo at run time (the trybuild UI tests) runs where cargo is, not there:
# targets or packages whose name matches GPU_BINS_SKIP (a regex; the default matches "ui" as a
# word, i.e. the ui-tests package) are left out. .gpu-bin/ is in .gitignore; GPU_BINS_OUT names
# another folder.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--workspace --features rules-runtime/testing)
out=${GPU_BINS_OUT:-.gpu-bin}
rm -rf "$out" && mkdir -p "$out"
collect() { # $1 = prefix; reads cargo's JSON messages on stdin
  python3 -c '
import json, os, re, shutil, sys
prefix, out, skip = sys.argv[1], sys.argv[2], sys.argv[3]
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    exe = m.get("executable") if m.get("reason") == "compiler-artifact" else None
    if not exe: continue
    if "proc-macro" in m["target"]["kind"]: continue
    pkg = m.get("package_id", "").split("#")[0].rsplit("/", 1)[-1]
    if skip and (re.search(skip, m["target"]["name"]) or re.search(skip, pkg)): continue
    name = prefix + "-" + m["target"]["name"]
    shutil.copy2(exe, os.path.join(out, name))
    print("  ", name)
' "$1" "$out" "${GPU_BINS_SKIP-(^|[-_/])ui($|[-_])}"
}
echo "tests:";    cargo test  "${args[@]}" --no-run --message-format=json-render-diagnostics | collect test
if [ $# -eq 0 ]; then
  # The runtime's unit tests with the std::autodiff bridges (their GPU tests among them), which
  # only its `autodiff` feature compiles: test-autodiff-rules_runtime.
  cargo test -p rules-runtime --features testing,autodiff --lib --no-run \
    --message-format=json-render-diagnostics | collect test-autodiff
fi
echo "benches:";  cargo bench "${args[@]}" --no-run --message-format=json-render-diagnostics | collect bench || true
echo "examples:"; cargo build "${args[@]}" --release --examples --message-format=json-render-diagnostics | collect example || true
# Symbols are not needed there, and the copy has a size limit (64 MiB with the tree).
if command -v strip >/dev/null; then strip "$out"/* 2>/dev/null || true; fi
du -sh "$out"
