#!/usr/bin/env bash
# Decode load over shared memory (resident 8192x8192 [N,K] weight, M=16, 64 callers, 8 channels,
# --shm) against the server's executor thread counts (launch + completion threads per GPU:
# 1+1, 2+4, 4+8) with batching on and off, and GemmStream at 4+8. Run ON THE GPU MACHINE from a
# device bundle with gemm_server, gemm_client and gemm_loadgen on PATH (see
# scripts/gpu_service_bench.sh). GPU 0 only; results under $OUT (default /tmp/gemm-decode-threads).
set -uo pipefail
OUT=${OUT:-/tmp/gemm-decode-threads}
mkdir -p "$OUT"
# shellcheck source=lib/decode_run.sh
source "$(dirname "$0")/lib/decode_run.sh"
run() {  # run NAME SERVER_FLAGS... (loadgen extras in $LG)
  local name=$1
  shift
  # shellcheck disable=SC2086
  decode_run "$name" --shapes=16x8192x8192 --verify_fraction=0.01 ${LG:-} -- "$@"
}
for t in "1 1" "2 4" "4 8"; do
  set -- $t
  run on-l$1c$2 --launch_threads_per_device=$1 --completion_threads_per_device=$2
  run off-l$1c$2 --batching=false --launch_threads_per_device=$1 --completion_threads_per_device=$2
done
LG=--rpc=stream run on-stream-l4c8
LG=--rpc=stream run off-stream-l4c8 --batching=false
