#!/usr/bin/env bash
# Checks the Prometheus endpoint of a CUDA-backend gemm_server on a GPU machine (binaries built,
# scripts/lib/gpu_env.sh): starts the server with --metrics_port, sends a few requests, scrapes
# /metrics and fails unless the request counter and pool gauges are present.
set -uo pipefail
# shellcheck source=lib/gpu_env.sh
source "$(dirname "$0")/lib/gpu_env.sh"
port=${PORT:-50399}
mport=${METRICS_PORT:-9464}
log=$OUT/server-metrics.log
gemm_server --backend=cuda --host=127.0.0.1 --port=$port --metrics_port=$mport >"$log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
wait_for_server "$port" || { cat "$log"; exit 1; }
gemm_client --target=127.0.0.1:$port gemm --m=64 --n=256 --k=512 --verify || exit 1
body=$(python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://127.0.0.1:$mport/metrics', timeout=5).read().decode())") || {
  echo "metrics: scrape failed"; cat "$log"; exit 1; }
echo "$body" | grep -E '^gemm_(rpcs_total|pool_bytes|kernel_info)' | head -20
echo "$body" | grep -q '^gemm_rpcs_total' || { echo "metrics: no gemm_rpcs_total"; exit 1; }
echo "metrics: OK"
