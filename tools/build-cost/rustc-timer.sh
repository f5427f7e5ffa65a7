#!/usr/bin/env bash
# RUSTC_WRAPPER used by run.sh: runs `rustc ARGS...` unchanged and, when the crate is one of the
# generated build_cost_* crates, appends "CRATE SECONDS" (wall time of that rustc process alone,
# no cargo overhead, no dependencies) to $BUILD_COST_LOG.
rustc=$1
shift
case " $* " in
*" --crate-name build_cost_"*) ;;
*) exec "$rustc" "$@" ;;
esac
crate=
prev=
for a in "$@"; do
    [ "$prev" = --crate-name ] && crate=$a
    prev=$a
done
t0=$(date +%s%N)
rc=0
"$rustc" "$@" || rc=$?
t1=$(date +%s%N)
if [ -n "${BUILD_COST_LOG:-}" ]; then
    echo "$crate $(((t1 - t0) / 1000000))" >>"$BUILD_COST_LOG"
fi
exit "$rc"
