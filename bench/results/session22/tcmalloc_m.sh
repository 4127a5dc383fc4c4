#!/usr/bin/env bash
# Session 22 (one GPU): gemm_server linked with tcmalloc (gperftools 2.10, minimal) against the
# glibc build of d242b1d: the service suite on the tcmalloc build; the decode defaults and
# delay 20 / idle 2 with CUDA IPC operands, each build, alternating; batching off once each; the
# large inline load once each.
NAME=tcmalloc_m
source scripts/lib/device_call.sh
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat "$L/summary.txt"
source scripts/lib/decode_run.sh
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
for s in gemm_server gemm_server_glibc; do
  SERVER=$s decode_run $s-off $DS -- --batching=false
  SERVER=$s decode_run $s-default $DS --
  SERVER=$s decode_run $s-d20i2 $DS -- --max_queue_delay_us=20 --idle_units_per_device=2
done
for s in gemm_server gemm_server_glibc; do
  CUDA_VISIBLE_DEVICES=0 "$B/$s" --backend=cuda --host=127.0.0.1 --port=50410 --metrics_port=0 \
    --self_test=false >"$L/server-large-$s.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50410 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 120 gemm_loadgen --target=127.0.0.1:50410 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shapes=4096x4096x4096 --b=inline --concurrency=8 --verify_fraction=0.02 \
    --json="$L/large-$s.json" >"$L/large-$s.txt" 2>&1
  kill -TERM $pid; wait $pid
  echo "== large inline $s"; grep -A1 "^point" "$L/large-$s.txt" | tail -1
done
grep -h allocator "$L"/server-*.log | sed 's/.*allocator/allocator/' | sort | uniq -c
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
head -8 "$L/decode_summary.txt"
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
