#!/usr/bin/env bash
# Kernel figures of docs/PERF.md: runs gemm_bench over every shape set (decode, large, batched,
# grouped, moe, m_sweep; both B layouts, every row checked against cuBLASLt, each strided row's
# read-only floor over its B timed too) on GPU 0 and writes
#   $RESULTS_DIR/<gpu>.jsonl   one JSON object per line ("copy" lines with the device's copy and
#                              read bandwidth, then one line per row); replaced on every run
#   $OUT/<gpu>.log             the human-readable tables and the GPU's clocks
# Use (from anywhere in the tree, on a GPU machine):
#   bench/run_bench.sh [path/to/gemm_bench] [extra gemm_bench flags...]
# Default binary: gemm_bench on PATH, else build/bench/gemm_bench. RESULTS_DIR defaults to
# bench/results, OUT to /tmp/gemm-run_bench (scripts/lib/gpu_env.sh). Each set runs in its own
# process under a time limit, so one failing set cannot take the others down; every process
# measures the copy bandwidth itself. Tables: bench/perf_table.py $RESULTS_DIR/<gpu>.jsonl
set -uo pipefail
# shellcheck source=../scripts/lib/gpu_env.sh
source "$(dirname "$0")/../scripts/lib/gpu_env.sh"
bin=${1:-$(command -v gemm_bench || echo build/bench/gemm_bench)}
shift || true
jsonl=$RESULTS_DIR/$GPU_SLUG.jsonl
log=$OUT/$GPU_SLUG.log
tmp=$(mktemp)
: >"$log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv >>"$log"
status=0
for set in decode large batched grouped moe m_sweep; do
  echo "## gemm_bench --set $set --layout both --check --json --read_floor $*" >>"$log"
  timeout 240 "$bin" --set "$set" --layout both --check --json --read_floor "$@" \
    >>"$tmp" 2>>"$log" || { rc=$?; status=1; echo "## set $set exited with $rc" >>"$log"; }
done
mv "$tmp" "$jsonl"
grep -E "geomean|read-only|exited|device" "$log"
echo "results: $jsonl; log: $log (exit $status)"
exit "$status"
