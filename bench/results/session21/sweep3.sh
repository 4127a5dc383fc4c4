#!/usr/bin/env bash
# Session 21, one GPU, fifth call: the final server code (SubmitAll + AnswerBatch, with the
# deferred write also holding back the end of a write in flight). Which queue delay and idle
# rule to default to: closed loop at 64 callers (the bar's load) and the open loop (Poisson,
# 30k/60k/90k req/s), for delays 0/10/25/50 us and --idle_units_per_device 1 (default) or 3.
# Batching off and main's server at its defaults for reference. Engine suites first.
NAME=sweep3
source scripts/lib/device_call.sh
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
suite stream_packing_test
suite batcher_test
cat $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
decode_run nobatch $DS -- --batching=false
SERVER=gemm_server_base decode_run base $DS --
for d in 0 10 25 50; do decode_run c-d$d $DS -- --max_queue_delay_us=$d; done
decode_run c-d50-i3 $DS -- --max_queue_delay_us=50 --idle_units_per_device=3
decode_run c-d25-i3 $DS -- --max_queue_delay_us=25 --idle_units_per_device=3
open_point() {  # open_point NAME RATES SERVER_FLAGS...
  local name=$1 rates=$2
  shift 2
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 --metrics_port=0 \
    --self_test=false "$@" >$L/server-$name.log 2>&1 &
  local pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50400 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 200 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --channels=8 --rpc=packed --streams_per_channel=1 \
    --shapes=16x8192x8192 --verify_fraction=0.01 --shm_output_slots=1024 --max_outstanding=1024 \
    --rate=$rates --arrival=poisson --json=$L/$name.json >$L/$name.txt 2>&1
  kill -TERM $pid; wait $pid
  echo "== $name ($*)"; grep "^rate=" $L/$name.txt
}
for d in 10 25 50; do open_point open-d$d 30000,60000,90000 --max_queue_delay_us=$d; done
open_point open-d50-i3 30000,60000,90000 --max_queue_delay_us=50 --idle_units_per_device=3
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -18
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
