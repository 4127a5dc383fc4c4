#!/usr/bin/env bash
# Runs gemm_bench on the GPU machine and writes bench/results/<gpu>-<date>.jsonl plus a log.
# Use (from the repository root, with gemm_bench built or bundled):
#   bench/run_bench.sh [path/to/gemm_bench] [extra gemm_bench flags...]
# Default binary: build/bench/gemm_bench. Output directory: $OUT when set (the GPU machine's
# return folder), else bench/results.
set -euo pipefail
bin=${1:-build/bench/gemm_bench}
shift || true
out=${OUT:-bench/results}
mkdir -p "$out"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//')
date=$(date -u +%Y-%m-%d)
name="$out/${gpu,,}-$date"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee "$name.gpu.txt"
# One process for every set: the copy bandwidth is measured in the same run.
"$bin" --set all --layout both --check --json "$@" > "$name.jsonl" 2> "$name.log" || status=$?
cat "$name.log"
echo "results: $name.jsonl (exit ${status:-0})"
exit "${status:-0}"
