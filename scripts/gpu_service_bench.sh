#!/usr/bin/env bash
# Service-level figures for docs/PERF.md, run ON THE GPU MACHINE from a device bundle made with
#   ../shared/tools/device-bundle.sh .device-bundle-svc build/server/gemm_server \
#       build/client/gemm_client build/client/loadgen/gemm_loadgen
# then (device tool): source .device-bundle-svc/env.sh && scripts/gpu_service_bench.sh
# Writes loadgen JSON reports and server logs under $OUT (default /tmp/gemm-svc-bench).
#   1. decode: resident B 8192x8192 ([N,K] weight), M=16, 64 callers, batching on vs off
#   2. large inline: 4096^3 with A and B in every request
#   3. moe (LOADS=moe): mixture-of-experts decode steps, each a group of 2 of 8 resident experts
#      (one token each), Mixtral-like up (28672x4096) and down (4096x14336) projections,
#      batching on (200 us and 50 us) vs off
set -uo pipefail
# EXTRA: more loadgen flags for every load, e.g. EXTRA=--shm (operands and outputs through a
# registered shared-memory region instead of the gRPC messages).
OUT=${OUT:-/tmp/gemm-svc-bench}
mkdir -p "$OUT"
WINDOW=${WINDOW:-2}
port=50151

start_server() {  # start_server NAME FLAGS...
  local name=$1
  shift
  port=$((port + 1))
  gemm_server --backend=cuda --host=127.0.0.1 --port=$port --metrics_port=${METRICS:-0} "$@" \
    >"$OUT/server-$name.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do
    gemm_client --target=127.0.0.1:$port info >"$OUT/info-$name.json" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "server $name did not start"; cat "$OUT/server-$name.log"; return 1
}

stop_server() {  # stop_server NAME
  kill -TERM $server_pid; wait $server_pid
}

loadgen() {  # loadgen NAME FLAGS...
  local name=$1
  shift
  gemm_loadgen --target=127.0.0.1:$port --warmup_s=1 --window_s=$WINDOW --max_windows=4 \
    --progress=off --json="$OUT/$name.json" ${EXTRA:-} "$@" 2>&1 | tee "$OUT/$name.txt"
}

# LOADS: which loads to run, space-separated (default "decode large").
LOADS=${LOADS:-decode large}
has_load() { [[ " $LOADS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv | tee "$OUT/gpu.txt"
if has_load decode; then
  start_server batched && {
    loadgen decode-batched --shapes=16x8192x8192 --b=resident --b_layout=nk --concurrency=64 \
      --verify_fraction=0.01
    stop_server batched
  }
  start_server unbatched --batching=false && {
    loadgen decode-unbatched --shapes=16x8192x8192 --b=resident --b_layout=nk --concurrency=64
    stop_server unbatched
  }
fi
if has_load large; then
  start_server large && {
    loadgen large-inline --shapes=4096x4096x4096 --b=inline --concurrency=1:8:x2 \
      --verify_fraction=0.02
    stop_server large
  }
fi
if has_load moe; then
  for proj in 1x28672x4096 1x4096x14336; do
    for mode in d200 d50 off; do
      case $mode in
        d200) flags=() ;;
        d50) flags=(--max_queue_delay_us=50) ;;
        off) flags=(--batching=false) ;;
      esac
      start_server "moe-$proj-$mode" "${flags[@]}" && {
        loadgen "moe-$proj-$mode" --shapes=$proj --b=resident --b_layout=nk --experts=8:2 \
          --concurrency=64 --verify_fraction=0.01
        stop_server "moe-$proj-$mode"
      }
    done
  done
fi
echo "gpu_service_bench: done"
