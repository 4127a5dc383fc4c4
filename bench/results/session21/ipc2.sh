#!/usr/bin/env bash
# Session 21, one GPU, seventh call: CUDA IPC operands with the copy kernel (device_copy.cu)
# instead of the driver's copy calls, which cost ~4-5 us of host time per IPC-mapped pointer
# (ipc.sh), and the loadgen's poison fill made synchronous (its asynchronous cudaMemset raced the
# server's writes of D: the mismatches of ipc.sh). Engine suites (with the new CUDA IPC service
# test), then decode with A and D in host shared memory and in the loadgen's GPU memory.
NAME=ipc2
source scripts/lib/device_call.sh
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
for r in 1 2; do
  decode_run host-d10-r$r $DS -- --max_queue_delay_us=10
  decode_run ipc-d10-r$r $DS --shm_device=0 -- --max_queue_delay_us=10
done
decode_run host-nobatch $DS -- --batching=false
decode_run ipc-nobatch $DS --shm_device=0 -- --batching=false
decode_run ipc-d0 $DS --shm_device=0 -- --max_queue_delay_us=0
decode_run ipc-d50 $DS --shm_device=0 --
decode_run ipc-d10-v0 $DS --shm_device=0 --verify_fraction=0.001 -- --max_queue_delay_us=10
decode_run ipc-ceil $DS --shm_device=0 --shapes=16x128x128 -- --max_queue_delay_us=10
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -14
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
