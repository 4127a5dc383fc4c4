#!/usr/bin/env bash
# Session 22 (one GPU): the large inline load (large_k.sh) with the jemalloc build told never to
# return freed pages (MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1, on top of the built-in
# oversize_threshold:0: the policy glibc gets from --reuse_large_buffers), against the glibc build
# plain and with tcmalloc preloaded; then the decode defaults with that jemalloc setting.
NAME=large_l
source scripts/lib/device_call.sh
TC=$PWD/.device-bundle-s/lib/libtcmalloc_minimal.so.4
large() {  # large NAME ENV... -- SERVER
  local n=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" CUDA_VISIBLE_DEVICES=0 "$B/$1" --backend=cuda --host=127.0.0.1 --port=50410 \
    --metrics_port=0 --self_test=false >"$L/server-$n.log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50410 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 120 gemm_loadgen --target=127.0.0.1:50410 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shapes=4096x4096x4096 --b=inline --concurrency=8 --verify_fraction=0.02 \
    --json="$L/$n.json" >"$L/$n.txt" 2>&1
  kill -TERM $pid; wait $pid
  echo "== $n"; grep -A3 "^point" "$L/$n.txt" | grep -v "^point\|^--"
}
KEEP="MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1"
large je-keep-r1 $KEEP -- gemm_server
large glibc-r1 X=1 -- gemm_server_glibc
large tc-r1 LD_PRELOAD=$TC -- gemm_server_glibc
large je-keep-r2 $KEEP -- gemm_server
source scripts/lib/decode_run.sh
gemm_server() { exec env $KEEP "$B/gemm_server" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
decode_run je-keep-default $DS --
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
