#!/usr/bin/env bash
# Instructions executed by each generated crate's own rustc (valgrind's callgrind, "I refs"), in a
# debug build: a figure that does not move with the machine's load, where run.sh's times do
# (two runs of the same crate agree within 0.1%; times within 10% on a shared 2-core machine).
#
#   tools/build-cost/run.sh ...                          # first: writes the crates, builds deps
#   tools/build-cost/instructions.sh                     # plain, annotated, expanded
#   tools/build-cost/instructions.sh plain annotated     # some of them
#   TOP=1 tools/build-cost/instructions.sh annotated     # + the costliest functions (inclusive)
#
# Each crate is built once beforehand (untimed), then touched and rebuilt with its rustc under
# callgrind (about 30-60 s a crate). The profiles stay in $BUILD_COST_DIR/callgrind.<crate>.out
# for callgrind_annotate (`--inclusive=yes`: rules_macro::expand::derivative_rule is the macro's
# own work inside rustc). Exits 3 where valgrind is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
DIR=${BUILD_COST_DIR:-$root/target/build-cost}
if ! command -v valgrind >/dev/null; then
    echo "instructions: valgrind is not installed (callgrind counts the instructions)" >&2
    exit 3
fi
[ $# -gt 0 ] || set -- plain annotated expanded
for c in "$@"; do
    if [ ! -d "$DIR/crates/$c" ]; then
        echo "instructions: no crate $DIR/crates/$c: run tools/build-cost/run.sh first" >&2
        exit 2
    fi
done
# run.sh's target dir (dependencies built there) and its timing wrapper, which hands the
# generated crates' rustc to callgrind when BUILD_COST_CALLGRIND names a file.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$DIR/target} CARGO_INCREMENTAL=0
export RUSTC_WRAPPER=$here/rustc-timer.sh CARGO_TERM_COLOR=never
declare -A ir
for c in "$@"; do
    (cd "$DIR/crates/$c" && cargo build --lib -q)
    touch "$DIR/crates/$c/src/lib.rs"
    out=$DIR/callgrind.$c.out
    rm -f "$out"
    (cd "$DIR/crates/$c" && BUILD_COST_CALLGRIND=$out cargo build --lib -q)
    ir[$c]=$(sed -n 's/^summary: *//p' "$out")
    [ -n "${ir[$c]}" ] || { echo "instructions: no count in $out" >&2; exit 1; }
done
echo "| crate | instructions (rustc, debug build) | / plain |"
echo "|---|---|---|"
for c in "$@"; do
    ratio=-
    [ -n "${ir[plain]:-}" ] && ratio=$(awk -v a="${ir[$c]}" -v p="${ir[plain]}" 'BEGIN { printf "%.3f×", a / p }')
    printf '| %s | %s | %s |\n' "$c" "${ir[$c]}" "$ratio"
done
if [ "${TOP:-0}" = 1 ]; then
    for c in "$@"; do
        echo
        echo "$c, the costliest functions (inclusive):"
        callgrind_annotate --inclusive=yes "$DIR/callgrind.$c.out" 2>/dev/null |
            grep -E '^ *[0-9,]+ \(' | grep -E 'rules_macro::|check_well_formed |mir_borrowck |encode_metadata |build_mir' |
            sed -E 's/ \[[^]]*\]$//' | head -20
    done
fi
