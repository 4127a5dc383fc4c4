#!/usr/bin/env bash
# Session 23 (one GPU): main 553e1b6's server (tcmalloc linked). Service suite; then three rounds
# of the decode ratio (batching off, delay 20 / idle 2, defaults), and the two batching points
# again with tcmalloc preloaded into the load generator (LG=tc), alternating.
NAME=ratio_a
source scripts/lib/device_call.sh
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat "$L/summary.txt"
source scripts/lib/decode_run.sh
decode_machine
TC=$(ls $PWD/.device-bundle-s/lib/libtcmalloc_minimal.so* | head -1)
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
ON="--max_queue_delay_us=20 --idle_units_per_device=2"
for r in 1 2 3; do
  decode_run ipc-off-r$r $DS -- --batching=false
  decode_run ipc-on-r$r $DS -- $ON
  decode_run ipc-default-r$r $DS --
  LD_PRELOAD=$TC decode_run lgtc-on-r$r $DS -- $ON
  LD_PRELOAD=$TC decode_run lgtc-default-r$r $DS --
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
cat "$L/decode_summary.txt"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
