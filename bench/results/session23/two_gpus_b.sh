#!/usr/bin/env bash
# Session 23 (two GPUs, asked for nvidia-h200-x2), main 553e1b6: the service suite on two GPUs
# (among them 2ecf7d0's refactored CudaIpcOperandsOnSecondGpuRunThere), then the decode ratio
# (scripts/gpu_decode_ratio.sh, three rounds on GPU 0).
NAME=two_gpus_b
source scripts/lib/device_call.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader >"$L/gpu.txt"
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat "$L/summary.txt"
grep -E "^\[ +(OK|FAILED|SKIPPED) " "$L/engine_gpu_service_tests.log"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
