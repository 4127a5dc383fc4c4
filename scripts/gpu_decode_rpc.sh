#!/usr/bin/env bash
# Decode load (resident 8192x8192 [N,K] weight, M=16, 64 closed-loop callers, --shm, 8 channels)
# through the whole serving path, plus two reference points, run ON THE GPU MACHINE from a device
# bundle with gemm_server, gemm_client and gemm_loadgen on PATH (see scripts/gpu_service_bench.sh).
# GPU 0 only; loadgen JSON/text and server logs under $OUT (default /tmp/gemm-decode-rpc).
#   ceiling-*:  the same path with a 16x128x128 problem (GPU work negligible): what gRPC, the
#               batcher and the executor carry at 64 callers by themselves
#   stream-*:   GemmStream, one stream per caller (--streams_per_channel=8), batching on at
#               --max_queue_delay_us 25 / 50 / 200 (the default), and off
#   unary-*:    unary Gemm, batching on (50 us) and off
#   verify-d0:  batching on with no delay (batches of 1-10 mixing the small-M and SM90 kernels),
#               EVERY response checked against float64
set -uo pipefail
OUT=${OUT:-/tmp/gemm-decode-rpc}
mkdir -p "$OUT"
run() {  # run NAME LOADGEN_FLAGS... -- SERVER_FLAGS...
  local name=$1
  shift
  local lg=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do lg+=("$1"); shift; done
  shift
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 \
    --metrics_port=0 --self_test=false "$@" >"$OUT/server-$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do
    gemm_client --target=127.0.0.1:50400 info >/dev/null 2>&1 && break
    sleep 0.2
  done
  timeout 90 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --concurrency=64 --channels=8 \
    --json="$OUT/$name.json" "${lg[@]}" >"$OUT/$name.txt" 2>&1
  kill -TERM $pid
  wait $pid
  echo "== $name | loadgen ${lg[*]} | server $*"
  grep -A4 "^point" "$OUT/$name.txt" | grep -v "^point\|^--\|^server"
}
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
S="--rpc=stream --streams_per_channel=8 --verify_fraction=0.01"
run ceiling-stream $S --shapes=16x128x128 --
run ceiling-stream-off $S --shapes=16x128x128 -- --batching=false
for d in 25 50 200; do
  run stream-d$d $S --shapes=16x8192x8192 -- --max_queue_delay_us=$d
done
run stream-off $S --shapes=16x8192x8192 -- --batching=false
run unary-d50 --verify_fraction=0.01 --shapes=16x8192x8192 -- --max_queue_delay_us=50
run unary-off --verify_fraction=0.01 --shapes=16x8192x8192 -- --batching=false
run verify-d0 --rpc=stream --streams_per_channel=8 --verify_fraction=1 --shapes=16x8192x8192 -- \
  --max_queue_delay_us=0
