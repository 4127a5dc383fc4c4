#!/usr/bin/env bash
# Session 21, one GPU, sixth call: operands in the load generator's GPU memory, shared through
# CUDA IPC (gemm_loadgen --shm --shm_device=0; the server maps the allocation and copies A and D
# device to device), against host shared memory, on the final SubmitAll + AnswerBatch server.
# Decode 16x8192x8192, resident [N,K] B, 64 callers, 8 packed streams; batching off and on.
NAME=ipc
source scripts/lib/device_call.sh
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
suite stream_packing_test
cat $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
decode_run host-nobatch $DS -- --batching=false
decode_run host-d10 $DS -- --max_queue_delay_us=10
decode_run ipc-nobatch $DS --shm_device=0 -- --batching=false
decode_run ipc-d0 $DS --shm_device=0 -- --max_queue_delay_us=0
decode_run ipc-d10 $DS --shm_device=0 -- --max_queue_delay_us=10
decode_run ipc-d50 $DS --shm_device=0 --
decode_run ipc-d10-v0 $DS --shm_device=0 --verify_fraction=0.001 -- --max_queue_delay_us=10
decode_run ipc-d10-c128 $DS --shm_device=0 --concurrency=128 -- --max_queue_delay_us=10
decode_run ipc-ceil $DS --shm_device=0 --shapes=16x128x128 -- --max_queue_delay_us=10
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -14
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
