#!/usr/bin/env bash
# Runs gemm_bench over every shape set on a GPU machine and writes, per run:
#   <out>/<gpu>-<date>.jsonl   one JSON object per line (a "copy" line per set, then the rows)
#   <out>/<gpu>-<date>.log     the human-readable tables and summaries
# Use (from the repository root):
#   bench/run_bench.sh [path/to/gemm_bench] [extra gemm_bench flags...]
# Default binary: build/bench/gemm_bench. <out>: $OUT when set (the lent GPU machine's return
# folder), else bench/results. Each set runs in its own process under a time limit, so one
# failing set cannot take the others down; every process measures the copy bandwidth itself.
set -uo pipefail
bin=${1:-build/bench/gemm_bench}
shift || true
out=${OUT:-bench/results}
mkdir -p "$out"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' |
      sed 's/-$//' | tr 'A-Z' 'a-z')
name="$out/${gpu}-$(date -u +%Y-%m-%d)"
: > "$name.jsonl"
: > "$name.log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv >> "$name.log"
status=0
for set in decode large batched grouped moe; do
  echo "## gemm_bench --set $set --layout both --check --json $*" >> "$name.log"
  timeout 240 "$bin" --set "$set" --layout both --check --json "$@" >> "$name.jsonl" \
    2>> "$name.log" || { rc=$?; status=1; echo "## set $set exited with $rc" >> "$name.log"; }
done
grep -E "geomean|exited|device" "$name.log"
echo "results: $name.jsonl, $name.log (exit $status)"
exit "$status"
