#!/usr/bin/env bash
# Session 23 (one GPU): kernel tactics (a resident matrix's serving kernel timed against cuBLASLt
# at M = 16..512 after upload; units run through the faster). engine_gpu_tests (with the new
# tactics test) and kernel_tactics_test; then two rounds of the decode ratio with tactics (the
# new default) and without (--kernel_tactics=false), and the logged tactics line.
NAME=tactics_e
source scripts/lib/device_call.sh
suite kernel_tactics_test
suite engine_gpu_tests
cat "$L/summary.txt"
grep -E "^\[ +(FAILED|OK) .*Tactics|tactics on device" "$L/engine_gpu_tests.log"
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
ON="--max_queue_delay_us=20 --idle_units_per_device=2"
for r in 1 2; do
  decode_run off-r$r $DS -- --batching=false
  decode_run on-r$r $DS -- $ON
  decode_run default-r$r $DS --
  decode_run notac-off-r$r $DS -- --batching=false --kernel_tactics=false
  decode_run notac-on-r$r $DS -- $ON --kernel_tactics=false
  decode_run notac-default-r$r $DS -- --kernel_tactics=false
done
grep -h "resident matrix" "$L"/server-on-r1.log "$L"/server-notac-on-r1.log | cut -c1-400
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
head -16 "$L/decode_summary.txt"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
