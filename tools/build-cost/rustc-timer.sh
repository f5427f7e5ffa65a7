#!/usr/bin/env bash
# RUSTC_WRAPPER used by run.sh: runs `rustc ARGS...` unchanged and, when the crate is one of the
# generated build_cost_* crates, appends "CRATE WALL_MS CPU_MS" to $BUILD_COST_LOG: the wall time
# of that rustc process alone (no cargo overhead, no dependencies) and the CPU time it used, user
# and system, all its threads (steadier than the wall time on a machine other builds share).
# With BUILD_COST_CALLGRIND=FILE (instructions.sh), rustc runs under valgrind's callgrind instead.
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
if [ -n "${BUILD_COST_CALLGRIND:-}" ]; then
    # instructions.sh: the same rustc under callgrind, its profile (and instruction count, the
    # "summary:" line) in that file.
    valgrind --tool=callgrind --callgrind-out-file="$BUILD_COST_CALLGRIND" -q "$rustc" "$@" || rc=$?
else
    "$rustc" "$@" || rc=$?
fi
t1=$(date +%s%N)
if [ -n "${BUILD_COST_LOG:-}" ]; then
    # `times`' second line: the user and system time of this shell's children (rustc only). Run
    # in this shell, not a subshell of $(...), whose children are others.
    times >"$BUILD_COST_LOG.times.$$"
    cpu=$(sed -n 2p "$BUILD_COST_LOG.times.$$" | awk '{
        ms = 0
        for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); ms += p[1] * 60000 + p[2] * 1000 }
        printf "%d", ms }')
    rm -f "$BUILD_COST_LOG.times.$$"
    echo "$crate $(((t1 - t0) / 1000000)) $cpu" >>"$BUILD_COST_LOG"
fi
exit "$rc"
