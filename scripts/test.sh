#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, and runs every test with ctest
# (GPU tests skip themselves where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
scripts/install_deps.sh
scripts/build.sh "$preset"
ctest --preset "$preset" -j "${GEMM_TEST_JOBS:-2}" --timeout 600
