#!/usr/bin/env bash
# The GPU suite and the sanitizers for two builds of the project on one machine, in one call:
# "before" and "after" a change, each a folder of binaries from tools/gpu-bins.sh. Jobs run in
# parallel (each test binary a job; under a sanitizer, each binary's tests split into shards of
# their own process), under one deadline, so that both builds fit a device call's time limit.
#
#   tools/gpu-compare.sh "WORDS" SECONDS [P]      # P jobs at once (default 8)
#
# WORDS, any of: `tests` (every test binary with --include-ignored, the example, the no-device
# runs; then, alone on the card, gpu_soundness and multi_gpu but its scratch test), `multi`
# (multi_gpu without its scratch test), `scratch` (that test, alone), `seed` (the std::autodiff
# example, alone: it reads the device's memory in use), and a sanitizer: `memcheck`, `racecheck`,
# `synccheck` (over the suites gpu-suite.sh sanitizes, plus the binaries named in EXTRA), or
# `memcheck:test-a,test-b` (over those binaries). E.g. "tests memcheck", then
# "racecheck synccheck multi", then "scratch".
#
# The builds: GPU_COMPARE_BEFORE and GPU_COMPARE_AFTER (folders), or before.tar.xz and
# after.tar.xz beside this script (a .gpu-bin each, packed to pass the copy's size limit).
# Output in $OUT: summary-WORDS.txt (one line a job: test counts, sanitizer summary, exit
# status) and all-WORDS.log.xz (every job's log). Under 14 sanitizer processes at once,
# racecheck reported "Internal Sanitizer Error: Detected a failure to track a kernel launch"
# (counted as a hazard) in both builds; at 3 at once the same shards were clean: keep P modest
# for racecheck. GPU_COMPARE_DRY=1 (no GPU, CI): prints each job's command, runs nothing.
set -u
mode=$1; budget=$2; P=${3:-8}
here=$(cd "$(dirname "$0")" && pwd)
dry=${GPU_COMPARE_DRY:-0}
start=$(date +%s); deadline=$((start + budget))
out=${OUT:-gpu-logs}; work=$(mktemp -d); logs=$work/logs; jobs=$work/jobs
mkdir -p "$logs" "$jobs" "$out"
declare -A dirs
for v in before after; do
  case $v in before) d=${GPU_COMPARE_BEFORE:-} ;; after) d=${GPU_COMPARE_AFTER:-} ;; esac
  if [ -z "$d" ]; then
    d=/tmp/gpu-compare-$v
    [ -d "$d" ] || { mkdir -p "$d" && tar -xJf "$here/$v.tar.xz" -C "$d"; } || exit 2
  fi
  dirs[$v]=$(cd "$d" && pwd)
done
nccl=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])" 2>/dev/null)
if [ -n "$nccl" ]; then
  mkdir -p /tmp/ncclso && ln -sf "$nccl/lib/libnccl.so.2" /tmp/ncclso/libnccl.so
  export LD_LIBRARY_PATH=/tmp/ncclso:$nccl/lib:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0
fi
[ "$dry" = 1 ] || nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/card.txt"
n=0
job() { # prio name limit env-prefix command...  (prio: lower runs first)
  local prio=$1 name=$2 limit=$3; shift 3
  n=$((n+1))
  local f=$jobs/$(printf '%03d-%04d' "$prio" "$n").sh
  { echo "name='$name'; limit=$limit; deadline=$deadline"
    echo 'left=$((deadline - $(date +%s) - 10)); [ $left -lt $limit ] && limit=$left'
    echo 'if [ $limit -lt 15 ]; then echo "SKIPPED (time)" > '"$logs"'/$name.log; exit 0; fi'
    echo 't0=$(date +%s)'
    printf 'timeout $limit'; printf ' %q' "$@"; echo ' > '"$logs"'/$name.log 2>&1'
    echo 'rc=$?; echo "### rc=$rc $(( $(date +%s) - t0 ))s" >> '"$logs"'/$name.log'
  } > "$f"
}
run_jobs() { # P: runs (or, dry, prints) the jobs written so far, lowest priority number first
  if [ "$dry" = 1 ]; then
    for f in $(ls $jobs/*.sh 2>/dev/null); do grep '^timeout' "$f" | sed 's/ >.*//'; done
    rm -f $jobs/*.sh
    return
  fi
  ls $jobs/*.sh 2>/dev/null | xargs -r -P "$1" -n1 bash
  rm -f $jobs/*.sh
}
shards() { # bin count skip-substrings... -> prints shard lists (one line each, names space-separated)
  local b=$1 k=$2; shift 2
  local re=NONE-AT-ALL; [ $# -gt 0 ] && re=$(IFS='|'; echo "$*")
  "$b" --list --include-ignored 2>/dev/null | sed -n 's/: test$//p' | grep -Ev "$re" | awk -v k="$k" '{ s[NR % k] = s[NR % k] " " $0 } END { for (i in s) print s[i] }'
}
if [[ " $mode " == *" tests "* ]]; then
  for v in before after; do
    b=${dirs[$v]}
    for t in $b/test-*; do
      nm=$(basename $t)
      case $nm in test-gpu_soundness|test-multi_gpu) continue;; esac
      p=50; [ $nm = test-gpu ] && p=10; [ $nm = test-autodiff-rules_runtime ] && p=20
      job $p "$v.$nm" 400 $t --include-ignored
    done
    job 60 "$v.example-round_trip" 60 $b/example-round_trip
    [ -x $b/autodiff-seed ] && job 30 "$v.autodiff-seed" 200 $b/autodiff-seed
    job 60 "$v.no-device" 60 env CUDA_VISIBLE_DEVICES= $b/test-gpu_soundness --exact a_driver_without_a_device_answers_no_device --nocapture
    job 60 "$v.no-device-probe" 60 env CUDA_VISIBLE_DEVICES= $b/test-gpu --exact gpu_suite_is_ignored_without_a_gpu_and_says_why --nocapture
  done
  run_jobs "$P"
  # Tests that read the device's free memory run with nothing else on the card.
  for v in before after; do
    b=${dirs[$v]}; rm -f $jobs/*.sh
    job 1 "$v.test-gpu_soundness" 200 $b/test-gpu_soundness --include-ignored
    job 2 "$v.test-multi_gpu" 200 $b/test-multi_gpu --include-ignored --skip two_gpus --skip nccl_scratch
    run_jobs 1
  done
fi
tools=$(echo " $mode " | sed 's/ tests / /; s/ multi / /; s/ scratch / /; s/ seed / /')
if [[ " $mode " == *" multi "* ]]; then
  rm -f $jobs/*.sh
  for v in before after; do job 5 "$v.test-multi_gpu-noscratch" 300 ${dirs[$v]}/test-multi_gpu --include-ignored --skip two_gpus --skip nccl_scratch; done
fi
if [ -n "${tools// /}" ]; then
  [[ " $mode " == *" multi "* ]] || rm -f $jobs/*.sh
  for word in $tools; do
    tool=${word%%:*}
    for v in before after; do
      b=${dirs[$v]}
      if [[ $word == *:* ]]; then set=$(echo ${word#*:} | tr ',' ' ' | sed "s|[^ ]*|$b/&|g")
      else set="$b/test-gpu $b/test-gpu_soundness $b/test-multi_gpu $(ls -d $b/test-gpu_region* $b/test-gpu_array*) $b/test-gpu_graphs $b/test-gpu_host_paths $(for e in ${EXTRA:-}; do echo $b/$e; done)"; fi
      for t in $set; do
        [ -e $t ] || continue
        nm=$(basename $t); skip=(2_pow_31); pre=(); k=2; p=40
        case $nm in
          test-gpu) skip=(2_pow_31 adjoint_checks); k=${KGPU:-8}; p=10;;
          test-gpu_soundness) skip=(thousand);;
          test-multi_gpu) skip=(two_gpus adjoint nccl_scratch); pre=(--report-api-errors no);;
          test-gpu_views) pre=(--report-api-errors no);;
          test-gpu_array_rules|test-gpu_regions|test-gpu_region_rules|test-gpu_rule_checks) k=3; p=20;;
          test-autodiff-rules_runtime|test-rules_runtime) k=4; p=20;;
        esac
        i=0
        while read -r names; do
          i=$((i+1)); [ -n "$names" ] || continue
          extra=(); [ $v.$nm = before.test-gpu_soundness ] && extra=(--test-threads=1)
          job $p "$v.$tool.$nm.$i" 500 compute-sanitizer --tool $tool "${pre[@]}" $t --include-ignored "${extra[@]}" --exact $names
        done < <(shards $t $k "${skip[@]}")
      done
    done
  done
fi
run_jobs "$P"
if [[ " $mode " == *" seed "* ]]; then
  # The example's loop reads the device's memory in use: alone on the card.
  for v in before after; do rm -f $jobs/*.sh; job 1 "$v.autodiff-seed-alone" 200 ${dirs[$v]}/autodiff-seed; run_jobs 1; done
fi
if [[ " $mode " == *" scratch "* ]]; then
  # Reads the device's free memory: alone on the card.
  for v in before after; do rm -f $jobs/*.sh; job 1 "$v.nccl_scratch" 400 ${dirs[$v]}/test-multi_gpu --include-ignored --exact nccl_scratch_is_released_with_its_stream --nocapture; run_jobs 1; done
fi
mode=$(echo $mode | tr ' :,' '_..' | cut -c1-40)
[ "$dry" = 1 ] && { rm -rf "$work"; exit 0; }
# One summary line per job, and every log in one file.
{
  echo "card: $(cat $out/card.txt)"; echo "mode $mode, P=$P, wall $(( $(date +%s) - start ))s"
  for f in $(ls $logs/*.log | sort); do
    printf '%-62s %s\n' "$(basename $f .log)" "$(grep -E '^test result|ERROR SUMMARY|RACECHECK SUMMARY|^### rc|SKIPPED|ALL OK|WRONG|correct\?' $f | tr '\n' ' ' | cut -c1-200)"
  done
} > "$out/summary-$mode.txt"
for f in $(ls $logs/*.log | sort); do echo "=================== $(basename $f)"; cat $f; done > $work/all-$mode.log
xz -T4 -6 -c $work/all-$mode.log > "$out/all-$mode.log.xz"
cat "$out/summary-$mode.txt"
rm -rf "$work"
