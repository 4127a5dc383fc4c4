#!/usr/bin/env bash
# Session 22 (one GPU): 256x128 tiles without a cluster for single problems of 128 < M <= 256
# (kernel/src/heuristics_sm90.cc). The kernel and engine suites; gemm_bench's decode set and the
# unit sizes through the dispatch (checked against cuBLASLt); then the decode ratio with CUDA IPC
# operands, three rounds, this server (gemm_server) against the one before the change
# (gemm_server_prev, d242b1d) in alternating order: batching off, the defaults, delay 20 / idle 2.
NAME=tall_h
source scripts/lib/device_call.sh
suite kernel_gpu_tests
suite engine_gpu_tests
cat "$L/summary.txt"
mkdir -p "$L/shapes"
{ echo "# coalesced decode unit sizes"; for m in 16 136 144 160 192 208 224 256; do echo "$m 8192 8192 1"; done; } >"$L/shapes/decode.txt"
timeout 120 gemm_bench --set decode --layout both --shapes "$L/shapes" --check >"$L/bench-units.txt" 2>&1
timeout 200 gemm_bench --set decode --layout both --check >"$L/bench-decode-set.txt" 2>&1
grep -E "^decode +[0-9]|geomean" "$L/bench-units.txt" "$L/bench-decode-set.txt" | awk '{print $1, $2, $3, $4, $6, $7, $8, $11, $12}'
source scripts/lib/decode_run.sh
decode_machine
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
for r in 1 2 3; do
  decode_run off-r$r $DS -- --batching=false
  for s in gemm_server gemm_server_prev; do
    [ $((r % 2)) = 0 ] && s=$([ $s = gemm_server ] && echo gemm_server_prev || echo gemm_server)
    SERVER=$s decode_run $s-default-r$r $DS --
    SERVER=$s decode_run $s-d20i2-r$r $DS -- --max_queue_delay_us=20 --idle_units_per_device=2
  done
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
date -u >"$L/end.txt"
head -24 "$L/decode_summary.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
