#!/usr/bin/env bash
# The README's run command: installs dependencies, builds, and starts gemm_server on port 50051
# (CUDA backend when a GPU is present, else the embedded CPU backend). Extra args go to the server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh default
exec build/server/gemm_server --backend=auto "$@"
