#!/usr/bin/env bash
# The std::autodiff example (examples/autodiff, docs/autodiff.md) on host memory: builds it with
# the nightly toolchain its rust-toolchain.toml names and that toolchain's `enzyme` component
# (Enzyme inside rustc), failing on any Enzyme error or unexpected warning (build.sh), then runs
# its GPU-free cases: the seed f(x) = sum(abs2, to_host(to_device(x))) through host copies in
# reverse and forward mode, dx = 2x exactly, with the rules' call counts; a pitched 2D round trip
# (dx = 2x in the box, 0 in the padding; reverse and forward mode) and a 3D one; a memset and a
# fill (the fill's value differentiated); two misuses that must be refused; and the loop case
# (1000 iterations of upload, memset, fill, download: an exact gradient, and memory that does not
# grow from one differentiation to the next). The GPU cases run on a GPU machine (`autodiff-seed`
# without arguments; `autodiff-seed loop` for the loop alone). Then checks that batch (vector)
# mode through a bridged rule still fails the way docs/autodiff.md records (src/batch_probe.rs).
#
# Exit status: 0 when it ran and passed; 1 when it failed; 3 when the toolchain or its `enzyme`
# component cannot be had here (the caller says so and goes on).
# Then builds rules-runtime with the same flags and every feature but CUDA's (the example leaves
# `testing` and `probe` off), and checks that -Zautodiff=Enable without the registration pass is
# refused by the runtime's build script with the fix.
#
# Environment: CARGO_TARGET_DIR (as build.sh: default examples/autodiff/target).
set -uo pipefail
cd "$(dirname "$0")/../examples/autodiff"
tc=$(sed -n 's/^channel = "\(.*\)"$/\1/p' rust-toolchain.toml)
have_enzyme() {
    local sysroot host
    sysroot=$(rustc "+$tc" --print sysroot 2>/dev/null) || return 1
    host=$(rustc "+$tc" -vV | sed -n 's/^host: //p')
    [ -f "$sysroot/lib/rustlib/$host/lib/libEnzyme-23.so" ]
}
if ! have_enzyme; then
    echo "autodiff.sh: installing $tc with its enzyme component" >&2
    timeout 900 rustup toolchain install "$tc" --profile minimal --component enzyme >&2 || true
fi
have_enzyme || exit 3
./build.sh || exit 1
# Batch (vector) mode through a bridged rule (docs/autodiff.md, "Batch (vector) mode"): this
# toolchain's Enzyme calls a custom rule with [W x ptr] shadows where the rule takes one ptr, so
# the width-2 builds must fail, each the known way; Enzyme's batch mode without a bridge must
# build and give each lane its exact gradient. A bridged build that starts to work fails this
# script, so that the docs and the bridges are brought up to it.
batch_log=${CARGO_TARGET_DIR:-target}/batch-probe.log
batch_probe() { # the probe's features; the build's output goes to $batch_log
    # rustc aborts on the reverse-mode probe: no core file.
    (ulimit -c 0; cargo "+$tc" build --release ${CARGO_FLAGS:-} --bin batch-probe --features "$1") \
        >"$batch_log" 2>&1
}
if ! batch_probe batch-probe; then
    echo "autodiff.sh: FAILED: Enzyme's batch mode without a bridge does not build ($batch_log):" >&2
    grep -E '^error|Assertion|ERROR' "$batch_log" | head -5 >&2
    exit 1
fi
"${CARGO_TARGET_DIR:-target}/release/batch-probe" || {
    echo "autodiff.sh: FAILED: Enzyme's batch mode without a bridge gave a wrong lane" >&2
    exit 1
}
for probe in "batch-reverse:calling with wrong number of arguments:trying to call fixaugment_" \
    "batch-forward:Call parameter type does not match function signature:fixderivative_"; do
    IFS=: read -r feature message wrapper <<<"$probe"
    if batch_probe "$feature"; then
        echo "autodiff.sh: FAILED: a bridged rule at batch width 2 ($feature) now builds: bring docs/autodiff.md (\"Batch (vector) mode\") and the bridges up to it; the probe says:" >&2
        "${CARGO_TARGET_DIR:-target}/release/batch-probe" >&2
        exit 1
    fi
    if ! grep -qF "$message" "$batch_log" || ! grep -qF "$wrapper" "$batch_log"; then
        echo "autodiff.sh: FAILED: a bridged rule at batch width 2 ($feature) fails otherwise than docs/autodiff.md records ('$message' at '$wrapper'):" >&2
        grep -E '^error|Assertion|ERROR' "$batch_log" | head -5 >&2
        exit 1
    fi
    echo "autodiff.sh: batch width 2 through a bridge ($feature) fails as recorded: $message ($wrapper<primal>)"
done
# The example built every crate with .cargo/config.toml's flags (-Zautodiff=Enable included,
# as a user's project does). The runtime again, from the workspace, with the features the
# example leaves off: rustc's type trees under -Zautodiff=Enable abort on some code that stable
# compiles (docs/autodiff.md, "Every crate under -Zautodiff=Enable"), and a user may enable them.
cd ../..
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-examples/autodiff/target}/workspace
cargo "+$tc" --config examples/autodiff/.cargo/config.toml build --release -p rules-runtime \
    --features autodiff,testing,probe,checked || {
    echo "autodiff.sh: FAILED: rules-runtime does not build with the autodiff flags and every feature" >&2
    exit 1
}
# -Zautodiff=Enable without the registration pass: the runtime's build script must stop the build
# and name the flags (without it rustc would abort later in Enzyme's type analysis).
out=$(RUSTFLAGS=-Zautodiff=Enable cargo "+$tc" check -p rules-runtime --features autodiff 2>&1)
if [ $? -eq 0 ] || ! grep -q 'needs -Zllvm-plugins=libEnzyme-23.so and -Cpasses=preserve-nvvm' <<<"$out"; then
    echo "autodiff.sh: FAILED: -Zautodiff=Enable without -Cpasses=preserve-nvvm was not refused by rules-runtime's build script:" >&2
    tail -20 <<<"$out" >&2
    exit 1
fi
echo "autodiff.sh: rules-runtime builds with the autodiff flags and every feature; a build without the registration pass is refused with the fix"
