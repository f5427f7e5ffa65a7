#!/usr/bin/env bash
# The GPU suite, run on the GPU machine over the binaries that tools/gpu-bins.sh put in .gpu-bin/
# (built where cargo is, then copied over with the tree). Logs go to $OUT (or ./gpu-logs); a summary
# line per step is printed.
#
#   tools/gpu-suite.sh tests        # every test binary with --include-ignored, the no-device run, the example
#
#   GPU_SUITE_DRY=1 tools/gpu-suite.sh tests   # no GPU: prints each step's command, and fails if
#                                               # a binary it names is not in .gpu-bin/ (CI)
# GPU_BINS_OUT names another folder than .gpu-bin/, as for tools/gpu-bins.sh.
#
# Test binaries run as `cargo test` runs them, with libtest's default thread count: the suites
# hold that (captures in thread-local mode, a global one in a process of its own; files whose
# tests must not overlap take a lock of their own).
#   tools/gpu-suite.sh sanitize     # compute-sanitizer memcheck, racecheck and synccheck over the GPU suites
#   tools/gpu-suite.sh bench        # bench-shadow_ops, bench-regions and bench-host_paths
# Two builds (before and after a change) on one card, in one call: tools/gpu-compare.sh.
set -u
out=${OUT:-gpu-logs}
bin=${GPU_BINS_OUT:-.gpu-bin}
dry=${GPU_SUITE_DRY:-0}
[ "$dry" = 1 ] || mkdir -p "$out"
missing=0
# NCCL from the image's pip wheel: cudarc looks for libnccl.so, the wheel ships libnccl.so.2.
nccl=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])" 2>/dev/null)
if [ -n "$nccl" ]; then
  mkdir -p /tmp/ncclso && ln -sf "$nccl/lib/libnccl.so.2" /tmp/ncclso/libnccl.so
  export LD_LIBRARY_PATH=/tmp/ncclso:$nccl/lib:${LD_LIBRARY_PATH:-} NCCL_NVLS_ENABLE=0
fi
step() { # name, timeout, command...
  local name=$1 limit=$2; shift 2
  if [ "$dry" = 1 ]; then
    local a
    for a in "$@"; do
      if [[ $a == "$bin"/* ]] && [ ! -x "$a" ]; then
        echo "MISSING $a (step $name)"
        missing=1
      fi
    done
    printf '%-34s would run: %s\n' "$name" "$*"
    return
  fi
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  printf '%-34s rc=%-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - t0))" \
    "$(grep -E '^test result|ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$out/$name.log" | tr '\n' ' ' | cut -c1-150)"
}
skip_multi=(--skip two_gpus)
case "${1:-tests}" in
tests)
  for t in "$bin"/test-*; do
    n=$(basename "$t")
    extra=()
    [ "$n" = test-multi_gpu ] && extra=("${skip_multi[@]}")
    step "$n" 400 "$t" --include-ignored "${extra[@]}"
  done
  CUDA_VISIBLE_DEVICES= step no-device 60 "$bin/test-gpu_soundness" --exact a_driver_without_a_device_answers_no_device --nocapture
  CUDA_VISIBLE_DEVICES= step no-device-probe 60 "$bin/test-gpu" --exact gpu_suite_is_ignored_without_a_gpu_and_says_why --nocapture
  step example 60 "$bin/example-round_trip"
  ;;
sanitize)
  for tool in memcheck racecheck synccheck; do
    step "$tool-gpu" 300 compute-sanitizer --tool "$tool" "$bin/test-gpu" --include-ignored --skip 2_pow_31 --skip adjoint_checks
    step "$tool-gpu_soundness" 300 compute-sanitizer --tool "$tool" "$bin/test-gpu_soundness" --include-ignored --skip thousand
    step "$tool-multi_gpu" 300 compute-sanitizer --tool "$tool" --report-api-errors no "$bin/test-multi_gpu" --include-ignored "${skip_multi[@]}" --skip adjoint --skip nccl_scratch
    for t in "$bin"/test-gpu_region* "$bin"/test-gpu_array* "$bin"/test-gpu_graphs "$bin"/test-gpu_host_paths; do
      [ -e "$t" ] || continue
      step "$tool-$(basename "$t" | sed 's/^test-//')" 300 compute-sanitizer --tool "$tool" "$t" --include-ignored --skip 2_pow_31
    done
  done
  ;;
bench)
  step bench-shadow_ops 400 "$bin/bench-shadow_ops"
  step bench-regions 150 "$bin/bench-regions"
  step bench-host_paths 150 "$bin/bench-host_paths"
  ;;
esac
if [ "$dry" = 1 ] && [ "$missing" = 1 ]; then
  echo "gpu-suite: binaries missing from $bin (tools/gpu-bins.sh builds them)"
  exit 1
fi
