#!/usr/bin/env bash
# Builds (cargo check) a crate that depends on rules-runtime and on cudarc the way candle does:
# `dynamic-linking` and `cuda-version-from-build-system`, with `rules-runtime`'s default CUDA
# version switched off. The CUDA version comes from CUDARC_CUDA_VERSION here (CI has no nvcc),
# then from an explicit cudarc version feature.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR=${INTEROP_TARGET_DIR:-../../target/interop}
CUDARC_CUDA_VERSION=12080 cargo check --quiet
cargo check --quiet --features cudarc/cuda-12080
echo "interop: rules-runtime builds next to cudarc with dynamic-linking (CUDA 12.8 bindings)"
