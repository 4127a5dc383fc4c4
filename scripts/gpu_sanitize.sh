#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck over our kernels and, when engine_gpu_tests is there
# too, over the serving engine's GPU work (with engine_gpu_service_tests and gemm_server, the CUDA
# IPC copy kernel in the real server). Runs on a GPU machine with gemm_bench and kernel_gpu_tests
# built (scripts/lib/gpu_env.sh puts build/ on PATH); writes one log per check and a summary.txt
# under $OUT (default /tmp/gemm-gpu_sanitize).
#   scripts/gpu_sanitize.sh
# small_m_test, when present, is checked too.
# NOTE: no --kernel-name filter. With `--kernel-name kns=Sm90GemmKernel` the sanitizer (2025.3.1,
# H100 and H200) stops at the first launch after an uninstrumented kernel ("Internal Sanitizer
# Error: failed to handle a hardware exception"), even when our kernel exits right after its
# prologue. Without the filter cuBLAS's kernels are checked too: races reported in them (nvjet_*)
# are counted apart in the summary; every other report (ours, memcheck errors, sanitizer errors)
# is counted as one to look at.
set -uo pipefail
# shellcheck source=lib/gpu_env.sh
source "$(dirname "$0")/lib/gpu_env.sh"
shapes=$(mktemp -d)
# Edges in M, N and K, a batch of 2, a decode row (small-M kernel); all with 16-byte pitches.
printf '%s\n' "257 520 64 1" "200 320 512 1" "128 256 128 2" "16 8192 1024 1" > "$shapes/large.txt"
summary=$OUT/summary.txt
compute-sanitizer --version | tail -1 | tee "$summary"

report() {  # report NAME STATUS: one summary line from $OUT/NAME.log
  local log=$OUT/$1.log
  local ours others sums tests
  ours=$(grep -E 'Race reported|Invalid|Error:' "$log" | grep -vc nvjet)
  others=$(grep -E 'Race reported' "$log" | grep -c nvjet)
  sums=$(grep -E 'SUMMARY' "$log" | sed 's/^=* *//' | paste -sd ';' -)
  tests=$(grep -E '^\[  (PASSED|FAILED)' "$log" | paste -sd ' ' -)
  echo "$1: exit $2; $sums; reports other than cuBLAS races: $ours;" \
    "cuBLAS (nvjet) races: $others; $tests" | tee -a "$summary"
}

for tool in memcheck racecheck; do
  for cluster in 1 2; do
    name=$tool-bench-cluster$cluster
    timeout 300 compute-sanitizer --tool $tool gemm_bench --set large --layout both \
      --shapes "$shapes" --reps 1 --warmup 0 --check --cluster $cluster >"$OUT/$name.log" 2>&1
    report "$name" $?
  done
  # One suite per run: under racecheck the cuBLASLt reference kernels make each suite slow.
  # racecheck (shared memory only) takes one test of each split: the forced factors' 90 runs, each
  # with its reference, outlast the 300 s limit under it (H200), and they differ only in global
  # memory.
  split='Sm90SplitK.*:Sm90StreamK.*'
  [ $tool = racecheck ] && split='Sm90SplitK.MatchesCublasLt:Sm90StreamK.MatchesCublasLt'
  for suite in 'Sm90Small.EdgesAndPaths' "$split" 'Sm90Batched.*' 'Sm90Grouped.*'; do
    name=$tool-$(echo "$suite" | tr -d '.*' | tr ':' '-')
    timeout 300 compute-sanitizer --tool $tool kernel_gpu_tests --gtest_filter="$suite" \
      >"$OUT/$name.log" 2>&1
    report "$name" $?
  done
  # The small-M (decode) kernel: stream-K with its fixup kernel, and cluster split-K through
  # distributed shared memory (racecheck: one shape of each, the sweep is slow under it).
  if command -v small_m_test >/dev/null; then
    name=$tool-small-m
    filter='SmallMTest.ClusterSplitK*:SmallMTest.ForcedGridSizes:SmallMTest.StridedBatch'
    [ $tool = racecheck ] && filter='SmallMTest.ClusterSplitKDeterministic:SmallMTest.DeterministicAcrossRuns'
    timeout 300 compute-sanitizer --tool $tool small_m_test --gtest_filter="$filter" \
      >"$OUT/$name.log" 2>&1
    report "$name" $?
  fi
  # The copy kernel of CUDA IPC operands and of A read where gRPC received it (every alignment).
  if command -v device_copy_gpu_test >/dev/null; then
    name=$tool-device-copy
    timeout 300 compute-sanitizer --tool $tool device_copy_gpu_test >"$OUT/$name.log" 2>&1
    report "$name" $?
  fi
  # The engine: inline and resident requests of both layouts, groups of mixed shapes, copies in
  # and out of the pools, coalesced batches with and without C, expert groups (memcheck also
  # checks for leaks at exit).
  if command -v engine_gpu_tests >/dev/null; then
    name=$tool-engine
    extra=()
    [ $tool = memcheck ] && extra=(--leak-check full)
    timeout 300 compute-sanitizer --tool $tool "${extra[@]}" engine_gpu_tests \
      --gtest_filter='EngineTest.SingleAndBatchInline*:EngineTest.GroupMixedShapes*:EngineTest.ResidentBBothLayouts*:EngineTest.CoalescedBatch*:EngineTest.StackedItems*:EngineTest.*Expert*' \
      >"$OUT/$name.log" 2>&1
    report "$name" $?
  fi
done
# The copy kernel of CUDA IPC operands (device_copy.cu) in the real server: the service test
# with the server under the sanitizer (scripts/lib/sanitized_server.sh hands the test's SIGTERM
# to the server, so the sanitizer exits with its summary). The test process is not sanitized:
# under --target-processes all its exported cudaMalloc allocation no longer matches what the
# server mapped (out-of-bounds reports in the copy kernel and failed requests).
if command -v engine_gpu_service_tests >/dev/null && command -v gemm_server >/dev/null; then
  name=memcheck-cuda-ipc
  SANITIZED_SERVER=$(command -v gemm_server) SANITIZER_LOG=$OUT/$name-server.log \
    SANITIZED_SERVER_FLAGS=--self_test=false \
    GEMM_SERVER_BINARY=$(dirname "$0")/lib/sanitized_server.sh timeout 400 \
    engine_gpu_service_tests --gtest_filter='*CudaIpc*' >"$OUT/$name.log" 2>&1
  rc=$?
  cat "$OUT/$name-server.log" >>"$OUT/$name.log"
  report "$name" $rc
fi
