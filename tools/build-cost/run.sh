#!/usr/bin/env bash
# Compile-time cost of #[derivative_rule]: N annotated copy functions against the same N plain ones.
#
#   tools/build-cost/run.sh            # N=200 functions, REPS=5, release build included
#   tools/build-cost/run.sh --quick    # N=8, REPS=1, check and debug: that the tool works (CI)
#   N=40 REPS=3 RELEASE=0 tools/build-cost/run.sh
#   FAMILIES=2 MODES="check debug" tools/build-cost/run.sh     # only one family of rules (gen.py)
#   MACRO_OPT=3 MODES="check debug" tools/build-cost/run.sh    # proc macros built with opt-level 3
#   ABLATE=1 MODES=check tools/build-cost/run.sh                # + edited copies of the expansion
#                                   (ablations of the earlier API, three generic functions a rule:
#                                   they assert its shape and do not apply to the rule objects)
#   ABLATE=1 ABLATIONS="x-bounds x-min" MODES=check tools/build-cost/run.sh   # only some of them
#
# What it does:
#  1. Snapshots the committed workspace (git archive HEAD) into $BUILD_COST_DIR/src-<commit>, so
#     edits in progress elsewhere neither change nor disturb the measurement. BUILD_COST_RUNTIME=
#     /path/to/rules-runtime uses that directory instead (e.g. the live working tree).
#  2. gen.py writes throwaway crates under $BUILD_COST_DIR/crates: `annotated` (N copy functions
#     with #[derivative_rule] and the role attributes) and `plain` (the same N functions and
#     bodies, no attributes). They depend on the runtime by path and are their own workspaces
#     ([workspace] in Cargo.toml): nothing here is a member of the project's workspace, or a test of it.
#  3. EXPAND=1 (default): builds a harness from a copy of rules-macro/src plus expand_rules.rs,
#     which runs the macro's expansion function outside rustc (timed: the macro's own work) and
#     writes crate `expanded`: the annotated crate's code after expansion, no macro. So
#     annotated - expanded ~ expansion inside rustc, expanded - plain ~ compiling what it generates.
#     Outside rustc the macro cannot ask the compiler for the source file around a rule
#     (rules-macro/src/place.rs answers "unsure" there), so that reading is only in annotated.
#     ABLATE=1 adds edited copies of `expanded` (gen.py --ablate): x-nodocs, x-forward, x-bounds,
#     x-fnitem, x-min (ABLATIONS="..." to time only some; all are generated).
#  4. Builds with a target dir of its own ($BUILD_COST_DIR/target, not the workspace's) and warms
#     up each mode once, so dependencies (cudarc, syn, rules-runtime, rules-macro...) are built
#     beforehand and never timed. MACRO_OPT=n builds proc macros at opt-level n (own target dir).
#  5. Per mode, REPS repetitions; each rep touches src/lib.rs of every crate and rebuilds it, the
#     crates taking turns going first. Timed: the crate's own rustc process (RUSTC_WRAPPER
#     rustc-timer.sh; the primary figure) and the whole cargo command (secondary).
#     rustc-timer.sh also logs the CPU time of that rustc process (user + system, every thread),
#     steadier than its wall time when other builds share the machine (the summary gives both).
#     Modes (MODES="check debug ..." to choose):
#            check     `cargo check --lib`,            CARGO_INCREMENTAL=0 (front end only)
#            debug     `cargo build --lib`,            CARGO_INCREMENTAL=0 (full debug build)
#            incr      `cargo build --lib`,            CARGO_INCREMENTAL=1 (dev default: touch, rebuild)
#            release   `cargo build --lib --release`   (unless RELEASE=0)
#  6. Code size: source bytes, .rmeta/.rlib sizes of the debug build, and MIR from stable
#     `rustc --emit=mir` (every body, generic ones included: generated functions, closures).
#  Prints a Markdown summary (medians), also written to $BUILD_COST_DIR/summary.md; raw times in
#  $BUILD_COST_DIR/times.log.
#
# Default $BUILD_COST_DIR is target/build-cost (ignored by git; `cargo clean` removes it). Needs
# bash, git, python3, cargo; no network once the workspace's dependencies are in cargo's cache.
# Adds no Rust dependency and nothing to the workspace. First run: a few minutes (dependencies).
set -euo pipefail
if [ "${1:-}" = --quick ]; then
    # Two rules of each family, once, in the front end and a debug build: the harness, the
    # generated crates and the summary all run, in about two minutes with the dependencies.
    : "${N:=8}" "${REPS:=1}" "${MODES:=check debug}" "${RELEASE:=0}"
    export MODES
elif [ $# -gt 0 ]; then
    echo "usage: [N=.. REPS=.. MODES=.. ...] $0 [--quick]   (see the header)" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
N=${N:-200}
REPS=${REPS:-5}
RELEASE=${RELEASE:-1}
FAMILIES=${FAMILIES:-0,1,2,3}
MACRO_OPT=${MACRO_OPT:-}
EXPAND=${EXPAND:-1}
ABLATE=${ABLATE:-0}
ABLATIONS=${ABLATIONS:-x-nodocs x-forward x-bounds x-fnitem x-min}
DIR=${BUILD_COST_DIR:-$root/target/build-cost}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

if [ -n "${BUILD_COST_RUNTIME:-}" ]; then
    runtime=$(cd "$BUILD_COST_RUNTIME" && pwd)
    source_desc="working tree at $runtime"
    ws=$runtime/..
else
    commit=$(git -C "$root" rev-parse HEAD)
    snap=$DIR/src-${commit:0:12}
    if [ ! -f "$snap/Cargo.toml" ]; then
        rm -rf "$snap.tmp" && mkdir -p "$snap.tmp"
        git -C "$root" archive --format=tar HEAD | tar -x -C "$snap.tmp"
        mv "$snap.tmp" "$snap"
    fi
    runtime=$snap/rules-runtime
    source_desc="commit ${commit:0:12} (snapshot $snap)"
    ws=$snap
fi
lock=$ws/Cargo.lock

crates=$DIR/crates
rm -rf "$crates"
python3 "$here/gen.py" "$crates" "$runtime" "$N" "$FAMILIES" "$MACRO_OPT"
for c in annotated plain expanded; do
    # The workspace's versions of cudarc, syn, half... (cargo drops the entries it does not need).
    [ -f "$lock" ] && cp "$lock" "$crates/$c/Cargo.lock"
done

# A proc macro built at another opt-level means other dependency artifacts: their own target dir.
export CARGO_TARGET_DIR=$DIR/target${MACRO_OPT:+-macro-opt$MACRO_OPT}
export RUSTC_WRAPPER=$here/rustc-timer.sh
export CARGO_TERM_COLOR=never
log=$DIR/times.log
: >"$log"

crate_list=(annotated plain)
expand_line=
if [ "$EXPAND" = 1 ]; then
    # The macro's expansion, run outside rustc by a harness built from a copy of rules-macro/src
    # (at the proc macro's opt-level), writes the `expanded` crate: the same code, no macro.
    echo "== expand: harness (untimed build), then the expansion of the $N rules" >&2
    h=$DIR/expand-harness
    rm -rf "$h" && mkdir -p "$h/src"
    cp -r "$ws/rules-macro/src/." "$h/src/"
    rm -f "$h/src/lib.rs" "$h/src/tests.rs"
    cp "$here/expand_rules.rs" "$h/src/"
    {
        echo '#![allow(warnings)]'
        # The macro's sources call proc_macro (place.rs asks whether a compiler is there, and
        # outside one it is not): a crate that is no proc macro names the sysroot crate itself.
        echo 'extern crate proc_macro;'
        for f in "$ws"/rules-macro/src/*.rs; do
            m=$(basename "$f" .rs)
            [ "$m" = lib ] || [ "$m" = tests ] || [ "$m" = expand_rules ] || echo "mod $m;"
        done
        echo 'include!("expand_rules.rs");'
    } >"$h/src/main.rs"
    {
        printf '[package]\nname = "expand-harness"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n'
        printf '[dependencies]\n'
        grep -E '^(syn|quote|proc-macro2) *=' "$ws/Cargo.toml"
        printf '\n[workspace]\n\n[profile.dev]\nopt-level = %s\n' "${MACRO_OPT:-0}"
    } >"$h/Cargo.toml"
    cp "$lock" "$h/Cargo.lock"
    (cd "$h" && cargo build -q)
    expand_line=$("$CARGO_TARGET_DIR/debug/expand-harness" "$crates/rules.txt" "$crates/expanded/src/lib.rs")
    crate_list+=(expanded)
    if [ "$ABLATE" = 1 ]; then
        python3 "$here/gen.py" --ablate "$crates"
        for c in $ABLATIONS; do
            cp "$lock" "$crates/$c/Cargo.lock"
            crate_list+=("$c")
        done
    fi
fi

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# build MODE CRATE [timed-rep-number]: one cargo invocation in the mode's configuration.
build() {
    local mode=$1 c=$2 rep=${3:-}
    local args=(build --lib) incr=0
    case $mode in
    check) args=(check --lib) ;;
    debug) ;;
    incr) incr=1 ;;
    release) args=(build --lib --release) ;;
    esac
    local t0 t1 tmp
    tmp=$DIR/rustc.log
    : >"$tmp"
    touch "$crates/$c/src/lib.rs"
    t0=$(now_ms)
    (cd "$crates/$c" && BUILD_COST_LOG=$tmp CARGO_INCREMENTAL=$incr cargo "${args[@]}" -q)
    t1=$(now_ms)
    if [ -n "$rep" ]; then
        local r cpu
        r=$(awk '{s += $2} END {print s + 0}' "$tmp")
        cpu=$(awk '{s += $3} END {print s + 0}' "$tmp")
        echo "$mode $c $rep $r $((t1 - t0)) $cpu" >>"$log"
    fi
}

if [ -n "${MODES:-}" ]; then
    read -r -a modes <<<"$MODES"
else
    modes=(check debug incr)
    [ "$RELEASE" = 1 ] && modes+=(release)
fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for mode in "${modes[@]}"; do
    echo "== $mode: warm-up (dependencies, untimed)" >&2
    for c in "${crate_list[@]}"; do build "$mode" "$c"; done
    for rep in $(seq 1 "$REPS"); do
        # Each rep in another order: the crates take turns going first.
        k=${#crate_list[@]}
        order=()
        for j in $(seq 0 $((k - 1))); do order+=("${crate_list[$(((j + rep) % k))]}"); done
        for c in "${order[@]}"; do build "$mode" "$c" "$rep"; done
        echo "   $mode rep $rep/$REPS: $(tail -n"$k" "$log" | awk '{printf "%s %d ms (cpu %d)  ", $2, $4, $6}')" >&2
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# Code size: MIR of every body (generic ones included) via stable --emit=mir.
echo "== code size" >&2
for c in "${crate_list[@]}"; do
    (cd "$crates/$c" && CARGO_INCREMENTAL=0 cargo rustc --lib -q -- --emit=mir="$DIR/$c.mir")
done

config="families $FAMILIES, proc-macro opt-level ${MACRO_OPT:-cargo default (0)}"
python3 - "$DIR" "$N" "$REPS" "$source_desc" "$load_before" "$load_after" "$config" "$CARGO_TARGET_DIR" "$expand_line" \
    <<'PY' | tee "$DIR/summary.md"
import glob, os, re, statistics, subprocess, sys
d, n, reps, source, lb, la, config, target, expand = sys.argv[1:]
rows = [l.split() for l in open(f"{d}/times.log")]
crates = list(dict.fromkeys(r[1] for r in rows))
crates = ["plain", "annotated"] + [c for c in crates if c not in ("plain", "annotated")]
def med(mode, c, col):
    v = [int(r[col]) for r in rows if r[0] == mode and r[1] == c]
    return (statistics.median(v) / 1000 if v else float("nan")), v
modes = [m for m in ["check", "debug", "incr", "release"] if any(r[0] == m for r in rows)]
what = {"check": "`cargo check --lib`, CARGO_INCREMENTAL=0",
        "debug": "`cargo build --lib` (dev), CARGO_INCREMENTAL=0",
        "incr": "`cargo build --lib` (dev), incremental, after `touch`",
        "release": "`cargo build --lib --release`"}
ver = subprocess.run(["rustc", "-V"], capture_output=True, text=True).stdout.strip()
print(f"N = {n} functions ({config}), {reps} repetitions per mode; runtime: {source}; {ver}; "
      f"{os.cpu_count()} cores; load average before {lb}, after {la}.\n")
print("Seconds, medians. *rustc*: the wall time of the crate's own rustc process (primary); "
      "*cpu*: its CPU time, user and system (steadier on a shared machine); *cargo*: the whole "
      "cargo command.\n")
extra = crates[2:]
print("| mode | plain rustc | annotated rustc | **annotated / plain** |"
      + "".join(f" {c} rustc | {c} / plain |" for c in extra)
      + " plain cpu | annotated cpu | **cpu ratio** |" + "".join(f" {c} cpu / plain |" for c in extra)
      + " plain cargo | annotated cargo | ratio |")
print("|---|---|---|---|" + "---|---|" * len(extra) + "---|---|---|" + "---|" * len(extra) + "---|---|---|")
raw = []
for m in modes:
    (pr, pv), (ar, av) = med(m, "plain", 3), med(m, "annotated", 3)
    pc, ac = med(m, "plain", 4)[0], med(m, "annotated", 4)[0]
    line = f"| {what[m]} | {pr:.2f} | {ar:.2f} | **{ar / pr:.2f}×** |"
    for c in extra:
        er = med(m, c, 3)[0]
        line += f" {er:.2f} | {er / pr:.2f}× |"
    (pu, _), (au, _) = med(m, "plain", 5), med(m, "annotated", 5)
    line += f" {pu:.2f} | {au:.2f} | **{au / pu:.2f}×** |"
    for c in extra:
        line += f" {med(m, c, 5)[0] / pu:.2f}× |"
    line += f" {pc:.2f} | {ac:.2f} | {ac / pc:.2f}× |"
    print(line)
    raw.append(f"- {m}: " + "; ".join(f"{c} {med(m, c, 3)[1]}" for c in crates))
    raw.append(f"- {m}, cpu: " + "; ".join(f"{c} {med(m, c, 5)[1]}" for c in crates))
print("\nAll repetitions (ms, rustc wall, then cpu):\n")
print("\n".join(raw))
if expand:
    k, us, tin, tout = map(int, expand.split())
    print(f"\nExpansion outside rustc (rules-macro's `expand::derivative_rule` on proc_macro2 "
          f"tokens, same opt-level as the proc macro): {k} rules in {us / 1000:.1f} ms "
          f"({us / k:.0f} µs a rule); tokens in {tin}, out {tout} ({tout / tin:.1f}×).")
print("\nCode size:\n")
print("| | " + " | ".join(crates) + " | annotated / plain |")
print("|---|" + "---|" * len(crates) + "---|")
def size(c):
    src = open(f"{d}/crates/{c}/src/lib.rs").read()
    mir = open(f"{d}/{c}.mir").read()
    fns = re.findall(r"^fn ([^(]*)\(", mir, re.M)
    closures = [f for f in fns if "{closure" in f]
    def newest(pat):
        fs = glob.glob(pat)
        return os.path.getsize(max(fs, key=os.path.getmtime)) if fs else 0
    lib = "libbuild_cost_" + c.replace("-", "_")
    rmeta = newest(f"{target}/debug/deps/{lib}-*.rmeta")
    rlib = newest(f"{target}/debug/deps/{lib}-*.rlib")
    return {"source bytes": len(src), "MIR functions (`fn`)": len(fns) - len(closures),
            "MIR closures": len(closures), "MIR lines (`--emit=mir`)": mir.count("\n"),
            "debug .rmeta bytes": rmeta, "debug .rlib bytes": rlib}
sizes = {c: size(c) for c in crates}
for k in sizes["plain"]:
    a, p = sizes["annotated"][k], sizes["plain"][k]
    r = f"{a / p:.2f}×" if p else "–"
    print(f"| {k} | " + " | ".join(str(sizes[c][k]) for c in crates) + f" | {r} |")
PY
