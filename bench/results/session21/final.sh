#!/usr/bin/env bash
# Session 21, one GPU, tenth call, on the final code (12bf710 and its test refactor): the engine
# suites; the CUDA IPC service test with the server under compute-sanitizer memcheck (the copy
# kernel's reads and writes of IPC-mapped memory); then the bar's ratio with CUDA IPC operands,
# three rounds of batching off / --max_queue_delay_us=10 --idle_units_per_device=2 / 20 us and
# idle 2, 0.1% of answers verified; host shared memory once each way.
NAME=final
source scripts/lib/device_call.sh
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
suite batcher_test
suite stream_packing_test
suite unit_plan_test
printf '#!/bin/sh\nexec compute-sanitizer --tool memcheck --error-exitcode 9 --log-file %s/memcheck-%%p.log %s/gemm_server --self_test=false "$@"\n' "$L" "$B" >$L/sanitized_server
chmod +x $L/sanitized_server
GEMM_SERVER_BINARY=$L/sanitized_server timeout 400 engine_gpu_service_tests \
  --gtest_filter='*CudaIpc*' >$L/memcheck_test.log 2>&1
echo "memcheck CudaIpc rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/memcheck_test.log | tr '\n' ' ')" >>$L/summary.txt
grep -h "ERROR SUMMARY" $L/memcheck-*.log >>$L/summary.txt
cat $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001"
IPC="--shm_device=0"
for r in 1 2 3; do
  decode_run nobatch-r$r $DS $IPC -- --batching=false
  decode_run d10-i2-r$r $DS $IPC -- --max_queue_delay_us=10 --idle_units_per_device=2
  decode_run d20-i2-r$r $DS $IPC -- --max_queue_delay_us=20 --idle_units_per_device=2
done
decode_run default-ipc $DS $IPC --
decode_run host-nobatch $DS -- --batching=false
decode_run host-d10-i2 $DS -- --max_queue_delay_us=10 --idle_units_per_device=2
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -16
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
