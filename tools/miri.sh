#!/usr/bin/env bash
# The host test suites under Miri (undefined behaviour, aliasing, leaks), under both of Miri's
# aliasing models, Stacked Borrows and Tree Borrows:
#   - rules-runtime: unit tests (--lib, with the autodiff bridges) and doc tests;
#   - rules-tests: the host-only integration tests activities, adjoint, errors, seed_round_trip,
#     soundness.
# Not run: tests/tests/gpu.rs and multi_gpu.rs (they need a GPU; Miri cannot load the driver, so
# under cfg(miri) `driver_available()` and `nccl_available()` answer false); rules-macro (a
# proc-macro crate without unsafe code, whose proptest cases would take hours interpreted);
# ui-tests (trybuild: compile-only, it runs rustc, not the code).
# Tests shrink their sizes under cfg(miri) where the native ones would take hours (adjoint.rs).
#
# Usage: tools/miri.sh [stacked] [tree]          (default: both, in parallel)
# Environment: MIRI_TOOLCHAIN (default nightly), MIRIFLAGS (added to the flags below),
#              MIRI_JOBS (parallel Miri processes; default: the number of cores),
#              CARGO_TARGET_DIR (as for cargo; Miri builds under its miri/ subfolder).
set -euo pipefail
cd "$(dirname "$0")/.."

toolchain=${MIRI_TOOLCHAIN:-nightly}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(stacked tree)
jobs=${MIRI_JOBS:-$(nproc)}

# The checks on top of the defaults: no integer-to-pointer casts (the crate only casts pointers
# to integers, to compare regions), and alignment from the type, not from where the allocator put
# the data.
base_flags="-Zmiri-strict-provenance -Zmiri-symbolic-alignment-check ${MIRIFLAGS:-}"

if ! cargo "+$toolchain" miri --version >/dev/null 2>&1; then
    echo "miri.sh: installing Miri into the $toolchain toolchain" >&2
    rustup component add --toolchain "$toolchain" miri rust-src
fi
cargo "+$toolchain" miri setup

# What each Miri process runs: the adjoint sweeps are most of the work, so they get one of their
# own; everything else is the other.
tests_flags=(-p rules-tests --test activities --test errors --test seed_round_trip --test soundness --test regions --test promises)
groups=(runtime-lib adjoint tests-other runtime-doc)
group_args() {
    case $1 in
    runtime-lib) echo "-p rules-runtime --lib --features autodiff" ;;
    runtime-doc) echo "-p rules-runtime --doc" ;;
    adjoint) echo "-p rules-tests --test adjoint" ;;
    tests-other) echo "${tests_flags[*]}" ;;
    esac
}

# Build once, so that the parallel runs below find everything compiled (doc tests compile when
# they run).
MIRIFLAGS="$base_flags" cargo "+$toolchain" miri test --no-run \
    -p rules-runtime --lib -p rules-tests --test activities --test adjoint --test errors \
    --test seed_round_trip --test soundness --test regions --test promises

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=() names=()
running=0
for model in "${models[@]}"; do
    case $model in
    stacked) flags="$base_flags" ;;
    tree) flags="-Zmiri-tree-borrows $base_flags" ;;
    *)
        echo "miri.sh: unknown model '$model' (stacked or tree)" >&2
        exit 2
        ;;
    esac
    for group in "${groups[@]}"; do
        while [ "$running" -ge "$jobs" ]; do
            wait -n || true # statuses are collected below, by pid
            running=$(jobs -rp | wc -l)
        done
        name="$model-$group"
        # shellcheck disable=SC2046  # group_args is a list of words on purpose
        (
            start=$SECONDS status=0
            MIRIFLAGS="$flags" cargo "+$toolchain" miri test $(group_args "$group") \
                >"$logs/$name.log" 2>&1 || status=$?
            echo "miri.sh: $name took $((SECONDS - start)) s" >>"$logs/$name.log"
            exit $status
        ) &
        pids+=($!) names+=("$name")
        running=$(jobs -rp | wc -l)
    done
done

failed=()
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then failed+=("${names[$i]}"); fi
    echo "=== ${names[$i]} ==="
    cat "$logs/${names[$i]}.log"
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "miri.sh: failed: ${failed[*]}" >&2
    exit 1
fi
echo "miri.sh: all Miri runs passed (${models[*]})"
