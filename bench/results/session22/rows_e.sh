#!/usr/bin/env bash
# Session 22, fifth call (one GPU), on f7c0264..d242b1d: the service suite and the CUDA IPC
# memcheck (server only, scripts/lib/sanitized_server.sh); then three rounds of the decode ratio
# with CUDA IPC operands: batching off; the defaults, delay 10 / idle 1 and delay 20 / idle 2,
# each also with --max_batch_rows=256 (units of at most two 128-row tiles: the kernel alone takes
# 64 us at M = 256 and 86 us at M = 272-320 on the H100, where cuBLAS takes 58-62).
NAME=rows_e
source scripts/lib/device_call.sh
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
SANITIZED_SERVER=$B/gemm_server SANITIZER_LOG=$L/memcheck-server.log \
  SANITIZED_SERVER_FLAGS=--self_test=false GEMM_SERVER_BINARY=$PWD/scripts/lib/sanitized_server.sh \
  timeout 400 engine_gpu_service_tests --gtest_filter='*CudaIpc*' >"$L/memcheck-test.log" 2>&1
echo "memcheck CudaIpc (server only) rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/memcheck-test.log" | tr '\n' ' ') $(grep -h 'ERROR SUMMARY\|Error:' "$L"/memcheck-server.log | tr '\n' ' ')" | tee -a "$L/summary.txt"
cat "$L/summary.txt"
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
for r in 1 2 3; do
  decode_run off-r$r $DS -- --batching=false
  decode_run default-r$r $DS --
  decode_run default-r256-r$r $DS -- --max_batch_rows=256
  decode_run d10i1-r$r $DS -- --max_queue_delay_us=10
  decode_run d10i1-r256-r$r $DS -- --max_queue_delay_us=10 --max_batch_rows=256
  decode_run d20i2-r$r $DS -- --max_queue_delay_us=20 --idle_units_per_device=2
  decode_run d20i2-r256-r$r $DS -- --max_queue_delay_us=20 --idle_units_per_device=2 --max_batch_rows=256
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
date -u >"$L/end.txt"
head -24 "$L/decode_summary.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
