#!/usr/bin/env bash
# Session 22, nvidia-h100-x2, on d242b1d: the service suite on two GPUs (the expert step across
# both in its new order, CUDA IPC operands on GPU 1 run there) and the split tests; one round of
# scripts/gpu_multi_gpu_bench.sh's compute-bound load (resident 28672^2 replicated, M=2048, 16
# callers, --shm), one GPU against two.
NAME=two-gpus
source scripts/lib/device_call.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader >"$L/gpu.txt"
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
suite device_split_test
suite engine_split_test
cat "$L/summary.txt"
grep -E "^\[ +(OK|FAILED|SKIPPED) " "$L/engine_gpu_service_tests.log"
OUT=$L/r1 EXTRA=--shm LOADS=compute COMPUTE_CONCURRENCY=16 bash scripts/gpu_multi_gpu_bench.sh >/dev/null 2>&1
grep -E "^==|^concurrency=16|verify" "$L/r1/summary.txt"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
