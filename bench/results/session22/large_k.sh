#!/usr/bin/env bash
# Session 22 (one GPU): the large inline load (4096^3, A and B in every request, 8 callers) with
# the jemalloc build now started with oversize_threshold:0 (jemalloc_j.sh: 19.7 against 25.7 req/s
# for the glibc build, copy-out 4.3 ms against 1.9) against the glibc build, twice each,
# alternating; then one round of the decode defaults with CUDA IPC operands, each build.
NAME=large_k
source scripts/lib/device_call.sh
for r in 1 2; do
  for s in gemm_server gemm_server_glibc; do
    CUDA_VISIBLE_DEVICES=0 "$B/$s" --backend=cuda --host=127.0.0.1 --port=50410 --metrics_port=0 \
      --self_test=false >"$L/server-large-$s-r$r.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do gemm_client --target=127.0.0.1:50410 info >/dev/null 2>&1 && break; sleep 0.2; done
    timeout 120 gemm_loadgen --target=127.0.0.1:50410 --warmup_s=1 --window_s=2 --max_windows=3 \
      --progress=off --shapes=4096x4096x4096 --b=inline --concurrency=8 --verify_fraction=0.02 \
      --json="$L/large-$s-r$r.json" >"$L/large-$s-r$r.txt" 2>&1
    kill -TERM $pid; wait $pid
    echo "== large inline $s r$r"; grep -A3 "^point" "$L/large-$s-r$r.txt" | grep -v "^point\|^--"; grep -m1 verify "$L/large-$s-r$r.txt"
  done
done
grep -h allocator "$L"/server-large-*.log | sed 's/.*allocator/allocator/' | sort | uniq -c
source scripts/lib/decode_run.sh
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
SERVER=gemm_server decode_run je-default $DS --
SERVER=gemm_server_glibc decode_run glibc-default $DS --
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
