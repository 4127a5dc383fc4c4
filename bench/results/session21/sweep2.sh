#!/usr/bin/env bash
# Session 21, one GPU, fourth call: the SubmitAll + AnswerBatch server (gemm_server of packs2.sh)
# around --max_queue_delay_us=0, the best point of sweep.sh: repeats, channels (requests per
# message), thread counts; batching off for the ratio; then the open loop (Poisson, 4 sender
# threads) at 30k, 60k, 90k req/s with delay 0 and 50 us.
NAME=sweep2
source scripts/lib/device_call.sh
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
decode_run nobatch $DS -- --batching=false
decode_run d0-r1 $DS -- --max_queue_delay_us=0
decode_run d50-r1 $DS --
decode_run d10 $DS -- --max_queue_delay_us=10
decode_run d0-ch4 $DS --channels=4 -- --max_queue_delay_us=0
decode_run d0-ch16 $DS --channels=16 -- --max_queue_delay_us=0
decode_run d0-l2 $DS -- --max_queue_delay_us=0 --launch_threads_per_device=2
decode_run d0-c4 $DS -- --max_queue_delay_us=0 --completion_threads_per_device=4
decode_run d0-r2 $DS -- --max_queue_delay_us=0
decode_run d50-r2 $DS --
open_point() {  # open_point NAME RATES DELAY
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 --metrics_port=0 \
    --self_test=false --max_queue_delay_us=$3 >$L/server-$1.log 2>&1 &
  local pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50400 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 200 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --channels=8 --rpc=packed --streams_per_channel=1 \
    --shapes=16x8192x8192 --verify_fraction=0.01 --shm_output_slots=1024 --max_outstanding=1024 \
    --rate=$2 --arrival=poisson --json=$L/$1.json >$L/$1.txt 2>&1
  kill -TERM $pid; wait $pid
  echo "== $1 (delay $3)"; grep "^rate=" $L/$1.txt
}
open_point open-d0 30000,60000,90000 0
open_point open-d50 30000,60000,90000 50
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -16
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
