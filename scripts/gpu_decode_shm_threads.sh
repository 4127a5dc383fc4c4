#!/usr/bin/env bash
# Decode load over shared memory (resident 8192x8192 [N,K] weight, M=16, 64 callers, 8 channels,
# --shm) against the server's executor thread counts (launch + completion threads per GPU:
# 1+1, 2+4, 4+8) with batching on and off, and GemmStream at 4+8. Run ON THE GPU MACHINE from a
# device bundle with gemm_server, gemm_client and gemm_loadgen on PATH (see
# scripts/gpu_service_bench.sh). GPU 0 only; results under $OUT (default /tmp/gemm-decode-threads).
set -uo pipefail
OUT=${OUT:-/tmp/gemm-decode-threads}
mkdir -p "$OUT"
run() {  # run NAME SERVER_FLAGS...
  local name=$1
  shift
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 \
    --metrics_port=0 --self_test=false "$@" >"$OUT/server-$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do
    gemm_client --target=127.0.0.1:50400 info >/dev/null 2>&1 && break
    sleep 0.2
  done
  timeout 60 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --shapes=16x8192x8192 --b=resident --b_layout=nk --concurrency=64 \
    --channels=8 --verify_fraction=0.01 --json="$OUT/$name.json" ${LG:-} >"$OUT/$name.txt" 2>&1
  kill -TERM $pid
  wait $pid
  echo "== $name $*"
  grep -A2 "^point" "$OUT/$name.txt" | grep -v "^point\|^--\|^server"
}
for t in "1 1" "2 4" "4 8"; do
  set -- $t
  run on-l$1c$2 --launch_threads_per_device=$1 --completion_threads_per_device=$2
  run off-l$1c$2 --batching=false --launch_threads_per_device=$1 --completion_threads_per_device=$2
done
LG=--rpc=stream run on-stream-l4c8
LG=--rpc=stream run off-stream-l4c8 --batching=false
