#!/usr/bin/env bash
# Session 23 (one GPU): the host cost of a unit's launch. New build: the device copy kernel's
# parameter block sized to the launch (was always 32 copies, 1.5 KiB) and 32-bit index math;
# EXPERIMENT flag --timing_every=N (only every N-th unit records its timing events). Against
# main 553e1b6's server (gemm_server_prev). device_copy_gpu_test and the CUDA IPC service tests
# on the new build; then two rounds, alternating builds and settings, at delay 20 / idle 2.
NAME=timing_f
source scripts/lib/device_call.sh
suite device_copy_gpu_test
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server GTEST_FILTER=*CudaIpcOperandsCoalesced*:*SixtyFour*
cat "$L/summary.txt"
source scripts/lib/decode_run.sh
decode_machine
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
ON="--max_queue_delay_us=20 --idle_units_per_device=2"
for r in 1 2; do
  SERVER=gemm_server_prev decode_run prev-off-r$r $DS -- --batching=false
  SERVER=gemm_server_prev decode_run prev-on-r$r $DS -- $ON
  decode_run new-on-r$r $DS -- $ON
  decode_run new-on-t4-r$r $DS -- $ON --timing_every=4
  decode_run new-on-t1000-r$r $DS -- $ON --timing_every=1000000
  decode_run new-off-r$r $DS -- --batching=false
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
cat "$L/decode_summary.txt"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
