#!/usr/bin/env bash
# The std::autodiff example (examples/autodiff, docs/autodiff.md) on host memory: builds it with
# the nightly toolchain its rust-toolchain.toml names and that toolchain's `enzyme` component
# (Enzyme inside rustc), failing on any Enzyme error or unexpected warning (build.sh), then runs
# its GPU-free cases: the seed f(x) = sum(abs2, to_host(to_device(x))) through host copies in
# reverse and forward mode, dx = 2x exactly, with the rules' call counts; a pitched 2D round trip
# (dx = 2x in the box, 0 in the padding; reverse and forward mode) and a 3D one; a memset and a
# fill (the fill's value differentiated); and two misuses that must be refused. The GPU cases run
# on a GPU machine (`autodiff-seed` without arguments).
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
