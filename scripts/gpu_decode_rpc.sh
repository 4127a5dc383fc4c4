#!/usr/bin/env bash
# Decode load (resident 8192x8192 [N,K] weight, M=16, 64 closed-loop callers, --shm, 8 channels)
# through the whole serving path, plus two reference points, run ON THE GPU MACHINE from a device
# bundle with gemm_server, gemm_client and gemm_loadgen on PATH (see scripts/gpu_service_bench.sh).
# GPU 0 only; loadgen JSON/text and server logs under $OUT (default /tmp/gemm-decode-rpc).
#   ceiling-*:  the same path with a 16x128x128 problem (GPU work negligible): what gRPC, the
#               batcher and the executor carry at 64 callers by themselves
#   stream-*:   GemmStream, one stream per caller (--streams_per_channel=8), batching on at
#               --max_queue_delay_us 25 / 50 / 200 (the default), and off
#   unary-*:    unary Gemm, batching on (50 us) and off
#   verify-d0:  batching on with no delay (batches of 1-10 mixing the small-M and SM90 kernels),
#               EVERY response checked against float64
set -uo pipefail
OUT=${OUT:-/tmp/gemm-decode-rpc}
mkdir -p "$OUT"
# shellcheck source=lib/decode_run.sh
source "$(dirname "$0")/lib/decode_run.sh"
run() { decode_run "$@"; }
decode_machine
S="--rpc=stream --streams_per_channel=8 --verify_fraction=0.01"
run ceiling-stream $S --shapes=16x128x128 --
run ceiling-stream-off $S --shapes=16x128x128 -- --batching=false
for d in 25 50 200; do
  run stream-d$d $S --shapes=16x8192x8192 -- --max_queue_delay_us=$d
done
run stream-off $S --shapes=16x8192x8192 -- --batching=false
run unary-d50 --verify_fraction=0.01 --shapes=16x8192x8192 -- --max_queue_delay_us=50
run unary-off --verify_fraction=0.01 --shapes=16x8192x8192 -- --batching=false
run verify-d0 --rpc=stream --streams_per_channel=8 --verify_fraction=1 --shapes=16x8192x8192 -- \
  --max_queue_delay_us=0
