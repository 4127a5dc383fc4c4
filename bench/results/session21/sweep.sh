#!/usr/bin/env bash
# Session 21, one GPU, third call: server settings on the SubmitAll + AnswerBatch server
# (gemm_server of packs2.sh), whose requests now arrive eight to a message: batcher delay and row
# bound, the in-flight work bound, launch and completion threads. Main's server and the
# AnswerBatch-only server at their defaults for reference. Same load as packs.sh.
NAME=sweep
source scripts/lib/device_call.sh
source scripts/lib/decode_run.sh
decode_machine
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
SERVER=gemm_server_base decode_run base $DS --
SERVER=gemm_server_a decode_run a $DS --
decode_run b $DS --
decode_run b-d0 $DS -- --max_queue_delay_us=0
decode_run b-d25 $DS -- --max_queue_delay_us=25
decode_run b-r128 $DS -- --max_batch_rows=128
decode_run b-r128-d0 $DS -- --max_batch_rows=128 --max_queue_delay_us=0
decode_run b-r256-d0 $DS -- --max_batch_rows=256 --max_queue_delay_us=0
decode_run b-w0 $DS -- --max_work_in_flight_ms_per_device=0
decode_run b-w0-d0 $DS -- --max_work_in_flight_ms_per_device=0 --max_queue_delay_us=0
decode_run b-l8 $DS -- --launch_threads_per_device=8 --streams_per_device=8
decode_run b-c4 $DS -- --completion_threads_per_device=4
decode_run b-again $DS --
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -16
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
