#!/usr/bin/env bash
# Session 21, one GPU: answers of a unit written per stream in one message (AnswerBatch), against
# main's server, and the transport's ceiling (grpc_echo_server). Closed loop, 64 callers, 8
# channels, packed streams, --shm, resident [N,K] B; server points verify 1% of their answers
# against float64 (the echo points cannot: nothing is computed).
#  1. engine_gpu_tests, engine_gpu_service_tests, batcher_test, unit_plan_test, device_split_test,
#     engine_split_test on the new server code.
#  2. decode 16x8192x8192: batching off (main); batched, main and new, two rounds in alternating
#     order; the echo server answering inline and from one thread.
NAME=packs
source scripts/lib/device_call.sh
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
suite batcher_test
suite unit_plan_test
suite device_split_test
suite engine_split_test
cat $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
# decode_run starts `gemm_server`: SERVER picks the binary (exec keeps the pid decode_run sees).
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1"
echo_run() {  # echo_run NAME MODE: the echo server answering MODE, one closed-loop point
  grpc_echo_server --port=50400 --answer=$2 >$L/server-$1.log 2>&1 &
  local pid=$!
  sleep 1
  timeout 90 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --concurrency=64 --channels=8 $DS \
    --verify_fraction=0 --json=$L/$1.json >$L/$1.txt 2>&1
  kill -TERM $pid; wait $pid
  echo "== $1"; grep -A1 "^point" $L/$1.txt | tail -1
}
SERVER=gemm_server_base decode_run base-nobatch $DS --verify_fraction=0.01 -- --batching=false
SERVER=gemm_server_base decode_run base-r1 $DS --verify_fraction=0.01 --
SERVER=gemm_server decode_run new-r1 $DS --verify_fraction=0.01 --
echo_run echo-inline inline
echo_run echo-thread thread
SERVER=gemm_server decode_run new-r2 $DS --verify_fraction=0.01 --
SERVER=gemm_server_base decode_run base-r2 $DS --verify_fraction=0.01 --
SERVER=gemm_server decode_run new-nobatch $DS --verify_fraction=0.01 -- --batching=false
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -14
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
