#!/usr/bin/env bash
# Session 22 (one GPU): gemm_server linked with jemalloc (this commit) against the glibc build of
# d242b1d (gemm_server_glibc). The service suite on the jemalloc build; three rounds of the decode
# ratio with CUDA IPC operands, alternating builds: batching off, the defaults, delay 20 / idle 2;
# then the large inline load (4096^3, A and B in every request, 8 callers) once per build, where
# glibc needed --reuse_large_buffers to keep 32 MiB buffers from page-faulting.
NAME=jemalloc_j
source scripts/lib/device_call.sh
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat "$L/summary.txt"
source scripts/lib/decode_run.sh
decode_machine
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
for r in 1 2 3; do
  order="gemm_server gemm_server_glibc"
  [ $((r % 2)) = 0 ] && order="gemm_server_glibc gemm_server"
  for s in $order; do
    SERVER=$s decode_run $s-off-r$r $DS -- --batching=false
    SERVER=$s decode_run $s-default-r$r $DS --
    SERVER=$s decode_run $s-d20i2-r$r $DS -- --max_queue_delay_us=20 --idle_units_per_device=2
  done
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
for s in gemm_server gemm_server_glibc; do
  CUDA_VISIBLE_DEVICES=0 "$B/$s" --backend=cuda --host=127.0.0.1 --port=50410 --metrics_port=0 \
    --self_test=false >"$L/server-large-$s.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50410 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 120 gemm_loadgen --target=127.0.0.1:50410 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shapes=4096x4096x4096 --b=inline --concurrency=8 --verify_fraction=0.02 \
    --json="$L/large-$s.json" >"$L/large-$s.txt" 2>&1
  kill -TERM $pid; wait $pid
  echo "== large inline $s"; grep -A3 "^point" "$L/large-$s.txt" | grep -v "^point\|^--"; grep verify "$L/large-$s.txt"
done
date -u >"$L/end.txt"
head -22 "$L/decode_summary.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
