#!/usr/bin/env bash
# A/B of gemm_server --reuse_large_buffers on large requests, one GPU, ON THE GPU MACHINE from a
# device bundle with gemm_server, gemm_client and gemm_loadgen on PATH (see
# scripts/gpu_service_bench.sh). Runs on, off, on; prints loadgen's result and server breakdown
# lines. Server logs go to $OUT (default /tmp/gemm-reuse-ab).
set -u
OUT=${OUT:-/tmp/gemm-reuse-ab}
mkdir -p "$OUT"
port=50300
for reuse in true false true; do
  port=$((port + 1))
  gemm_server --backend=cuda --host=127.0.0.1 --port=$port --metrics_port=0 \
    --reuse_large_buffers=$reuse >"$OUT/server-$reuse-$port.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:$port info >/dev/null 2>&1 && break; sleep 0.2; done
  for load in "--shapes=4096x4096x4096 --b=inline --concurrency=4 --channels=4" \
    "--shapes=2048x8192x8192 --b=resident --b_layout=nk --concurrency=32 --channels=4"; do
    echo "== reuse=$reuse $load"
    # shellcheck disable=SC2086
    gemm_loadgen --target=127.0.0.1:$port --warmup_s=1 --window_s=2 --max_windows=3 \
      --progress=off $load 2>&1 | grep -E "^concurrency"
  done
  kill -TERM $pid
  wait $pid
done
