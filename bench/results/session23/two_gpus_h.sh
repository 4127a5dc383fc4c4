#!/usr/bin/env bash
# Session 23 (two GPUs, nvidia-h100-x2), 6eef210 (GPU phases timed on every 8th unit): the
# service suite on two GPUs, then scripts/gpu_decode_ratio.sh (three rounds on GPU 0), tarred.
NAME=two_gpus_h
source scripts/lib/device_call.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader >"$L/gpu.txt"
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat "$L/summary.txt"
grep -E "^\[ +(OK|FAILED|SKIPPED) " "$L/engine_gpu_service_tests.log"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
