#!/usr/bin/env bash
# GPU machine: decode load (resident 8192x8192 [N,K] weight, M=16) over several gRPC channels,
# batching on vs off, to separate transport limits from GPU limits. Writes JSON under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gemm-decode-channels}
mkdir -p "$OUT"
run() {  # run NAME SERVER_FLAGS -- LOADGEN_FLAGS
  local name=$1; shift
  local sflags=()
  while [ "$1" != "--" ]; do sflags+=("$1"); shift; done; shift
  gemm_server --backend=cuda --host=127.0.0.1 --port=50177 --metrics_port=0 "${sflags[@]}" \
    >/tmp/server-$name.log 2>&1 &
  local pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50177 info >/dev/null 2>&1 && break; sleep 0.2; done
  gemm_loadgen --target=127.0.0.1:50177 --warmup_s=1 --window_s=2 --max_windows=4 --progress=off \
    --shapes=16x8192x8192 --b=resident --b_layout=nk --json="$OUT/$name.json" "$@" 2>&1 | tail -7
  kill -TERM $pid; wait $pid
}
run batched-ch8 -- --channels=8 --concurrency=64,256
run unbatched-ch8 --batching=false -- --channels=8 --concurrency=64,256
