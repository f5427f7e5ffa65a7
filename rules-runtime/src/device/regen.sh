#!/usr/bin/env bash
# Regenerates shadow.ptx from shadow.cu. Needs nvcc (CUDA 13.0 or the pip packages
# nvidia-cuda-nvcc, nvidia-nvvm, nvidia-cuda-crt, nvidia-cuda-runtime at 13.0.*).
# compute_75 is the oldest target CUDA 13 supports; the driver JIT-compiles it for newer GPUs.
set -euo pipefail
cd "$(dirname "$0")"
nvcc -ptx -arch=compute_75 -O3 -std=c++17 shadow.cu -o shadow.ptx
ptxas -arch=sm_90 -v shadow.ptx -o /dev/null 2>&1 | grep -E "registers|spill" || true
