#!/usr/bin/env bash
# Session 23 (one GPU), main 553e1b6: does the kernel's speed at a unit's M move the decode
# ratio? Two rounds of batching off / delay 20 idle 2 with the serving kernel (SM90 WGMMA) and
# with cuBLASLt named in every request (loadgen --kernel=cublaslt), plus the defaults with cuBLASLt.
NAME=cublas_d
source scripts/lib/device_call.sh
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
ON="--max_queue_delay_us=20 --idle_units_per_device=2"
for r in 1 2; do
  decode_run ours-off-r$r $DS -- --batching=false
  decode_run ours-on-r$r $DS -- $ON
  decode_run cublas-off-r$r $DS --kernel=cublaslt -- --batching=false
  decode_run cublas-on-r$r $DS --kernel=cublaslt -- $ON
  decode_run cublas-default-r$r $DS --kernel=cublaslt --
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
head -30 "$L/decode_summary.txt"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
