#!/usr/bin/env bash
# Configures and builds gemm-service with a CMake preset (default: "default" = CUDA when nvcc is
# found, else CPU only; "cpu" forces the CPU-only build). Used by CI, the Dockerfile and README.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
shift || true
cmake --preset "$preset" "$@"
cmake --build --preset "$preset" -j "${GEMM_BUILD_JOBS:-$(nproc)}"
