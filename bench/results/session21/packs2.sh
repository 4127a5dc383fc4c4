#!/usr/bin/env bash
# Session 21, one GPU, second call: the requests of one wire message queued together
# (GemmEngine::SubmitAll) on top of the AnswerBatch server, and a unit's answers all on one thread.
# Servers: gemm_server_base (main, 48c056b), gemm_server_a (AnswerBatch only, as packs.sh's
# "new"), gemm_server (AnswerBatch + SubmitAll; GEMM_EXP_ONE_TASK=1 runs all of a unit's answers
# as one task, an experiment switch not kept). Same load as packs.sh.
NAME=packs2
source scripts/lib/device_call.sh
suite batcher_test
suite engine_split_test
suite device_split_test
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
for r in 1 2; do
  SERVER=gemm_server_base decode_run base-r$r $DS --
  SERVER=gemm_server_a decode_run a-r$r $DS --
  SERVER=gemm_server decode_run b-r$r $DS --
  GEMM_EXP_ONE_TASK=1 SERVER=gemm_server decode_run b1task-r$r $DS --
done
SERVER=gemm_server decode_run b-nobatch $DS -- --batching=false
SERVER=gemm_server decode_run b-c128 $DS --concurrency=128 --
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -16
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
