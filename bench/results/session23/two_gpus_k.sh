#!/usr/bin/env bash
# Session 23 (nvidia-h100-x2), 6eef210's server: one round of scripts/gpu_multi_gpu_bench.sh's
# compute-bound load (resident 28672^2 replicated, M=2048, 16 callers, --shm), one GPU against two.
NAME=two_gpus_k
source scripts/lib/device_call.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader >"$L/gpu.txt"
OUT=$L/r1 EXTRA=--shm LOADS=compute COMPUTE_CONCURRENCY=16 bash scripts/gpu_multi_gpu_bench.sh >/dev/null 2>&1
grep -E "^==|^concurrency=16|verify" "$L/r1/summary.txt"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
