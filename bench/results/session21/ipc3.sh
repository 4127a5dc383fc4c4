#!/usr/bin/env bash
# Session 21, one GPU, eighth call: CUDA IPC operands (gemm_loadgen --shm --shm_device=0), server
# settings around --max_queue_delay_us=10, batching off and on at the same verify fraction
# (0.1%: the loadgen's verification is a synchronous CUDA memset and copy in its gRPC threads,
# ~16% of the batched rate at 1% in ipc2.sh). Same build as ipc2.sh.
NAME=ipc3
source scripts/lib/device_call.sh
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
decode_run nobatch-r1 $DS -- --batching=false
decode_run d10-r1 $DS -- --max_queue_delay_us=10
decode_run d5 $DS -- --max_queue_delay_us=5
decode_run d20 $DS -- --max_queue_delay_us=20
decode_run d10-i2 $DS -- --max_queue_delay_us=10 --idle_units_per_device=2
decode_run d10-l2 $DS -- --max_queue_delay_us=10 --launch_threads_per_device=2
decode_run d10-c4 $DS -- --max_queue_delay_us=10 --completion_threads_per_device=4
decode_run d10-w0 $DS -- --max_queue_delay_us=10 --max_work_in_flight_ms_per_device=0
decode_run d50 $DS --
decode_run d10-r2 $DS -- --max_queue_delay_us=10
decode_run nobatch-r2 $DS -- --batching=false
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -14
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
