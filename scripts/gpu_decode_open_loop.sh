#!/usr/bin/env bash
# Latency of the decode load under open-loop traffic, per batching delay, on GPU 0: Poisson
# arrivals at RATES requests/s (default 10000,30000,50000,60000,70000) sent from 4 threads,
# 16x8192x8192 against a resident [N,K] weight, 8 channels, packed streams, A and D in a POSIX
# shared-memory region, one server per --max_queue_delay_us in DELAYS (default "0 25 50 100
# 200"). Latency runs from each request's intended send time. Records decode-open-loop in
# $RESULTS_DIR/<gpu>-service.json; reports and server logs under $OUT.
set -uo pipefail
here=$(dirname "$0")
# shellcheck source=lib/gpu_env.sh
source "$here/lib/gpu_env.sh"
RATES=${RATES:-10000,30000,50000,60000,70000}
points=()
for d in ${DELAYS:-0 25 50 100 200}; do
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 \
    --metrics_port=0 --self_test=false --max_queue_delay_us="$d" >"$OUT/server-delay-$d.log" 2>&1 &
  pid=$!
  wait_for_server 50400
  timeout 300 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --channels=8 --rpc=packed \
    --streams_per_channel=1 --shapes=16x8192x8192 --verify_fraction=0.01 \
    --shm_output_slots=1024 --max_outstanding=1024 --dispatch_threads=4 --rate="$RATES" \
    --arrival=poisson --json="$OUT/delay-$d.json" >"$OUT/delay-$d.txt" 2>&1
  kill -TERM $pid
  wait $pid
  echo "== delay $d us"
  grep "^rate=" "$OUT/delay-$d.txt"
  points+=("--point=delay-$d:$OUT/delay-$d.json:--max_queue_delay_us=$d")
done
python3 "$here/lib/service_results.py" "$RESULTS_DIR" --load decode-open-loop \
  --what "16x8192x8192 against a resident [N,K] weight, Poisson arrivals at $RATES req/s from 4 sender threads, 8 channels, packed streams, A and D in a POSIX shared-memory region; latency from each request's intended send time" \
  --command "scripts/gpu_decode_open_loop.sh" "${points[@]}"
