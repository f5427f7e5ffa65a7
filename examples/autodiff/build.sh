#!/usr/bin/env bash
# Builds the std::autodiff example (and runs its GPU-free cases unless NO_RUN is set).
#
# The toolchain is rust-toolchain.toml's (nightly-2026-10-30 with its `enzyme` component). The
# flags go to THIS crate only (`cargo rustc -- FLAGS`), never through RUSTFLAGS: with
# `-Zautodiff=Enable` on every crate, rustc aborts compiling rules-runtime in its own type-tree
# code ("TypeTree.h:330 illegal insertion"). Fat LTO (Cargo.toml) brings the dependencies'
# bitcode into the module Enzyme works on.
#   -Zautodiff=Enable              std::autodiff's Enzyme pass
#   -Zllvm-plugins=libEnzyme-23.so + -Cpasses=preserve-nvvm: rustc runs only Enzyme's main pass;
#                                  this one turns `__enzyme_register_gradient_*` statics into
#                                  Enzyme's custom-derivative metadata (without it: "No
#                                  augmented forward pass found for ...")
# Enzyme's errors do not fail rustc (cargo exits 0; the binary returns zeros or traps), so this
# script fails when the build output holds an `Enzyme:` error. The warnings it expects are
# listed in docs/autodiff.md; any other `Enzyme:` warning fails the build too.
#
# Environment: CARGO_TARGET_DIR (default: target/ here), BIN_OUT (a path to copy the binary
# to), NO_RUN (build only), CARGO_FLAGS (e.g. --offline).
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
flags="-Zautodiff=Enable -Zllvm-plugins=$enzyme -Cpasses=preserve-nvvm"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
mkdir -p "$CARGO_TARGET_DIR"
log=$CARGO_TARGET_DIR/autodiff-build.log
# `touch`: cargo does not rebuild for changed flags given after `--`.
touch src/main.rs
cargo "+$tc" rustc --release ${CARGO_FLAGS:-} --bin autodiff-seed -- $flags >"$log" 2>&1
rc=$?
# Enzyme's diagnostics, one line each (rustc prints them as `error: Enzyme: ...` or
# `warning: Enzyme: ...`, the first line of a multi-line message).
diags=$(grep -E '^(error|warning)(\[[A-Z0-9]+\])?: .*Enzyme' "$log" | sort | uniq -c | cut -c1-220)
# Expected: once per bridged primal Enzyme differentiates through (docs/autodiff.md).
expected='Massaging provided custom augmented forward pass to handle constant argumented'
echo "build.sh: cargo rustc exited $rc; Enzyme diagnostics:"
[ -n "$diags" ] && echo "$diags" | sed 's/^/   /' || echo "   (none)"
if [ $rc -ne 0 ]; then
    tail -40 "$log" >&2
    exit $rc
fi
if grep -qE '^error.*Enzyme' "$log"; then
    echo "build.sh: FAILED: Enzyme reported errors (the binary computes wrong derivatives)" >&2
    exit 1
fi
unexpected=$(grep -E '^warning.*Enzyme' "$log" | grep -vF "$expected" || true)
if [ -n "$unexpected" ]; then
    echo "build.sh: FAILED: Enzyme warnings not known to be harmless (docs/autodiff.md):" >&2
    echo "$unexpected" >&2
    exit 1
fi
bin=$CARGO_TARGET_DIR/release/autodiff-seed
if [ -n "${BIN_OUT:-}" ]; then
    mkdir -p "$(dirname "$BIN_OUT")" && cp "$bin" "$BIN_OUT" && strip "$BIN_OUT"
fi
[ -n "${NO_RUN:-}" ] || "$bin" host
