#!/usr/bin/env bash
# Session 22, first call (one GPU): the engine suites on main's code plus the new two-GPU CUDA
# IPC test (skips on one GPU) and the compute-stream switch for CUDA IPC units; memcheck of the
# CUDA IPC test with the sanitizer following the server (scripts/gpu_sanitize.sh's last check);
# then two rounds of the decode ratio with CUDA IPC operands: batching off, delay 10 / idle 2 with
# the units on the compute stream (new default) and without (--device_units_on_compute_stream=false),
# delay 20 / idle 2, and the defaults. GPU utilization sampled per point.
NAME=verify_a
source scripts/lib/device_call.sh
which nsys ncu perf >"$L/tools.txt" 2>&1
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
suite engine_gpu_tests
suite batcher_test
suite stream_packing_test
suite unit_plan_test
cat "$L/summary.txt"
GEMM_SERVER_BINARY=$B/gemm_server timeout 300 compute-sanitizer --tool memcheck \
  --target-processes all engine_gpu_service_tests --gtest_filter='*CudaIpc*' \
  >"$L/memcheck-cuda-ipc.log" 2>&1
echo "memcheck CudaIpc rc=$? $(grep -E 'SUMMARY|^\[  (PASSED|FAILED)' "$L/memcheck-cuda-ipc.log" | tr '\n' ' ')" | tee -a "$L/summary.txt"
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
for r in 1 2; do
  decode_run off-r$r $DS -- --batching=false
  decode_run d10i2-r$r $DS -- --max_queue_delay_us=10 --idle_units_per_device=2
  decode_run d10i2-split-r$r $DS -- --max_queue_delay_us=10 --idle_units_per_device=2 --device_units_on_compute_stream=false
  decode_run d20i2-r$r $DS -- --max_queue_delay_us=20 --idle_units_per_device=2
  decode_run default-r$r $DS --
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
date -u >"$L/end.txt"
cat "$L/decode_summary.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
