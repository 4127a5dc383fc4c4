#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, and runs every test with ctest
# (GPU tests skip themselves where there is no GPU; the chaos test runs with the others), then
# runs each fuzz target for GEMM_FUZZ_SECONDS seconds (default 30; 0 skips them) and the
# integration suite against the ASan+UBSan build (GEMM_SANITIZE=asan by default; "none" skips
# it). Every step runs; the exit status is nonzero when any failed. See docs/testing.md.
set -uo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
scripts/install_deps.sh || exit 1
scripts/build.sh "$preset" || exit 1
failed=()
ctest --preset "$preset" -j "${GEMM_TEST_JOBS:-2}" --timeout 600 || failed+=(ctest)
fuzz_seconds=${GEMM_FUZZ_SECONDS:-30}
if [ "$fuzz_seconds" != 0 ]; then
  FUZZ_SECONDS=$fuzz_seconds scripts/fuzz.sh || failed+=(fuzz)
fi
sanitize=${GEMM_SANITIZE:-asan}
if [ "$sanitize" != none ]; then
  scripts/sanitize.sh $sanitize || failed+=(sanitize)
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: failed: ${failed[*]}"
  exit 1
fi
