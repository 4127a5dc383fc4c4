#!/usr/bin/env bash
# Session 22, third call (one GPU): the CUDA IPC service test with only the server under memcheck
# after the shared-mapping fix (server/core/device_mappings.h); the kernel alone against cuBLAS
# over the M a coalesced decode unit takes (N = K = 8192, B [N,K]); then three rounds of the
# decode ratio with CUDA IPC operands over the delay / idle / launch-thread settings, all with the
# units on the compute stream.
NAME=sweep_c
source scripts/lib/device_call.sh
SANITIZED_SERVER=$B/gemm_server SANITIZER_LOG=$L/memcheck-server.log \
  SANITIZED_SERVER_FLAGS=--self_test=false GEMM_SERVER_BINARY=$PWD/scripts/lib/sanitized_server.sh \
  timeout 400 engine_gpu_service_tests --gtest_filter='*CudaIpc*' >"$L/memcheck-test.log" 2>&1
echo "memcheck CudaIpc (server only) rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/memcheck-test.log" | tr '\n' ' ') $(grep -h 'ERROR SUMMARY' "$L"/memcheck-server.log | tr '\n' ' ')" | tee -a "$L/summary.txt"
mkdir -p "$L/shapes"
{ echo "# decode unit sizes"; for m in 16 32 64 96 128 144 160 176 192 208 224 256 320 384 512; do echo "$m 8192 8192 1"; done; } >"$L/shapes/decode.txt"
timeout 240 gemm_bench --set decode --layout nk --shapes "$L/shapes" --check >"$L/gemm_bench_m.txt" 2>&1
echo "gemm_bench rc=$?" >>"$L/summary.txt"
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
for r in 1 2 3; do
  decode_run off-r$r $DS -- --batching=false
  decode_run d20i2-r$r $DS -- --max_queue_delay_us=20 --idle_units_per_device=2
  decode_run d10i1-r$r $DS -- --max_queue_delay_us=10
  decode_run d20i1-r$r $DS -- --max_queue_delay_us=20
  decode_run default-r$r $DS --
  decode_run d20i2-l2-r$r $DS -- --max_queue_delay_us=20 --idle_units_per_device=2 --launch_threads_per_device=2
  decode_run d30i2-r$r $DS -- --max_queue_delay_us=30 --idle_units_per_device=2
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
date -u >"$L/end.txt"
cat "$L/summary.txt"
grep -E "^ *(16|32|64|96|128|144|160|176|192|208|224|256|320|384|512) " "$L/gemm_bench_m.txt" | head -20
cat "$L/decode_summary.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
