#!/usr/bin/env bash
# Regenerates shadow.ptx from shadow.cu and check.ptx from check.cu (the checked mode's compare
# kernels, a file of their own: shadow.ptx is close to the package's 1 MiB per file). Needs nvcc (CUDA 13.0 or the pip packages
# nvidia-cuda-nvcc, nvidia-nvvm, nvidia-cuda-crt, nvidia-cuda-runtime at 13.0.*).
# compute_75 is the oldest target CUDA 13 supports; the driver JIT-compiles it for newer GPUs.
set -euo pipefail
cd "$(dirname "$0")"
for k in shadow check; do
    nvcc -ptx -arch=compute_75 -O3 -std=c++17 "$k.cu" -o "$k.full.ptx"
    # The PTX without nvcc's comment lines, indentation and blank lines: the same program to the
    # driver's parser, about a tenth smaller, so that the file stays under the package's 1 MiB per
    # file (tools/publish-check.sh) and the binaries that embed it stay smaller.
    sed -E 's#^[ \t]*//.*$##; s/^[ \t]+//; s/[ \t]+/ /g; /^$/d' "$k.full.ptx" > "$k.ptx"
    rm "$k.full.ptx"
    ptxas -arch=sm_90 -v "$k.ptx" -o /dev/null 2>&1 | grep -E "registers|spill" || true
done
