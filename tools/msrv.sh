#!/usr/bin/env bash
# The declared rust-version (the root Cargo.toml's), checked with that toolchain: the two
# published crates with the features users turn on (the default CUDA version, `testing`; and
# another CUDA version with the default off, as next to candle), and rules-tests' library, a crate
# of user-written rules, so that the code the attribute generates is checked at that version too.
# Libraries only: the test suites' dev-dependencies (trybuild, proptest) follow their own MSRVs.
# The floor today is libloading 0.9's rust-version, 1.88.
#
# Usage: tools/msrv.sh                (the toolchain must be installed: .ci/run installs it)
# Environment: MSRV (default: the root Cargo.toml's rust-version),
#              MSRV_TARGET_DIR (default target/msrv: its builds stay apart from the stable ones).
set -euo pipefail
cd "$(dirname "$0")/.."
msrv=${MSRV:-$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)}
export CARGO_TARGET_DIR=${MSRV_TARGET_DIR:-target/msrv}
cargo "+$msrv" --version
cargo "+$msrv" check --locked -p rules-macro -p rules-runtime -p rules-tests --lib \
    --features rules-runtime/testing
cargo "+$msrv" check --locked -p rules-runtime --lib --no-default-features --features cuda-12080
echo "msrv: rules-macro, rules-runtime (default + testing; cuda-12080 alone) and rules-tests' rules build with Rust $msrv"
