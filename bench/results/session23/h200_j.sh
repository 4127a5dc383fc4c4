#!/usr/bin/env bash
# Session 23 (asked for nvidia-h200), 6eef210 server, 8f9589b tests:
# device_copy_gpu_test, the CUDA IPC service test, then scripts/gpu_decode_ratio.sh (three rounds).
NAME=h200_j
source scripts/lib/device_call.sh
suite device_copy_gpu_test
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server GTEST_FILTER=*CudaIpcOperandsCoalesced*
cat "$L/summary.txt"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
