#!/usr/bin/env bash
# Builds the std::autodiff example (and runs its GPU-free cases unless NO_RUN is set).
#
# The build is the one a user's project makes: `cargo build --release` with the toolchain
# rust-toolchain.toml names (nightly-2026-10-30 with its `enzyme` component), the flags of
# .cargo/config.toml for every crate (-Zautodiff=Enable, and Enzyme's pass that registers the
# rules: the file says why each), and fat LTO (Cargo.toml), which brings the dependencies'
# bitcode into the module Enzyme works on.
# Enzyme's errors do not fail rustc (cargo exits 0; the binary returns zeros or traps), so this
# script fails when the build output holds an `Enzyme:` error, and on any `Enzyme:` warning but
# the expected one (docs/autodiff.md, "Reading Enzyme's output"), and on any line of LLVM IR or
# other text beside those one-line diagnostics (a quiet build). It prints one line per Enzyme
# diagnostic; the whole output is in the log. A failed build leaves no binary behind: an earlier
# build's would otherwise stay in target/ and run.
#
# Environment: CARGO_TARGET_DIR (default: target/ here), BIN_OUT (a path to copy the binary
# to), NO_RUN (build only), CARGO_FLAGS (e.g. --offline). RUSTFLAGS must be unset: it would
# replace .cargo/config.toml's flags.
set -u
cd "$(dirname "$0")"
tc=$(sed -n 's/^channel = "\(.*\)"$/\1/p' rust-toolchain.toml)
sysroot=$(rustc "+$tc" --print sysroot) || { echo "build.sh: toolchain $tc missing" >&2; exit 2; }
host=$(rustc "+$tc" -vV | sed -n 's/^host: //p')
enzyme=$sysroot/lib/rustlib/$host/lib/libEnzyme-23.so
if [ ! -f "$enzyme" ]; then
    echo "build.sh: $enzyme missing: rustup component add --toolchain $tc enzyme" >&2
    exit 2
fi
if [ -n "${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-}" ]; then
    echo "build.sh: RUSTFLAGS is set; it would replace the flags of .cargo/config.toml: unset it" >&2
    exit 2
fi
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
mkdir -p "$CARGO_TARGET_DIR"
log=$CARGO_TARGET_DIR/autodiff-build.log
bin=$CARGO_TARGET_DIR/release/autodiff-seed
rm -f "$bin"
cargo "+$tc" build --release ${CARGO_FLAGS:-} --bin autodiff-seed >"$log" 2>&1
rc=$?
# Enzyme's diagnostics, one line each (rustc prints them as `error: Enzyme: ...` or
# `warning: ... Enzyme: ...`, the first line of a message that may go on with a function's IR).
diags=$(grep -E '^(error|warning)(\[[A-Z0-9]+\])?: .*Enzyme' "$log" | sort | uniq -c | cut -c1-220)
echo "build.sh: cargo build exited $rc; $(wc -l <"$log") lines of output ($log); Enzyme diagnostics:"
[ -n "$diags" ] && echo "$diags" | sed 's/^/   /' || echo "   (none)"
fail() {
    rm -f "$bin"
    echo "build.sh: FAILED: $*" >&2
    exit 1
}
if [ $rc -ne 0 ]; then
    grep -E '^error' "$log" | head -20 >&2
    tail -20 "$log" >&2
    rm -f "$bin"
    exit $rc
fi
grep -qE '^error.*Enzyme' "$log" && fail "Enzyme reported errors (the binary would compute wrong derivatives)"
# Expected, once per bridged primal and way Enzyme augments it (every bridge has an integer
# argument, which Enzyme treats as constant): one line each (docs/autodiff.md).
expected='Massaging provided custom augmented forward pass to handle constant argumented'
unexpected=$(grep -E '^warning.*Enzyme' "$log" | grep -vF "$expected" || true)
[ -z "$unexpected" ] || fail "Enzyme warnings not known to be harmless (docs/autodiff.md): $unexpected"
# A quiet build: no LLVM IR in the output (this Enzyme writes a function's IR to stderr after
# some diagnostics, e.g. for a custom augmented primal that returns a tape: docs/autodiff.md), and
# every line one of cargo's, a one-line warning or the blank line rustc puts after it.
ir=$(grep -nE '^define |^ *%[0-9A-Za-z_.]+ = |aug: todiff:|aug foundcalled:' "$log" | head -3 || true)
[ -z "$ir" ] || fail "LLVM IR in the build's output ($log): $ir"
other=$(grep -vE '^ *(Compiling|Finished|Updating|Locking|Downloaded|Downloading|Fresh) |^warning: |^$' "$log" | head -3 || true)
[ -z "$other" ] || fail "lines in the build's output that are not one-line diagnostics ($log): $other"
if [ -n "${BIN_OUT:-}" ]; then
    mkdir -p "$(dirname "$BIN_OUT")" && cp "$bin" "$BIN_OUT" && strip "$BIN_OUT"
fi
[ -n "${NO_RUN:-}" ] || "$bin" host
