#!/usr/bin/env bash
# Decode load (resident 8192x8192 [N,K] weight, M=16, 64 closed-loop callers, --shm, 8 channels,
# GemmStreamPacked with one stream per channel), batching on (50 us delay) and off, ROUNDS
# interleaved rounds (default 2) of three server settings:
#   polled   the defaults (kernels on one compute stream, 1 ms work bound, units completed by
#            polling their last event)
#   hostfn   the defaults with --poll_completion=false (a CUDA host function after each unit)
#   legacy   --serial_kernels=false --max_work_in_flight_ms_per_device=0 --poll_completion=false
#            (the defaults before the eighth session)
# then every response verified at 0 delay, and one GemmStream point per completion setting for
# the CPU per request of GemmStream against packed. Run ON THE GPU MACHINE from a device bundle
# with gemm_server, gemm_client and gemm_loadgen on PATH (see scripts/gpu_service_bench.sh).
# GPU 0 only; reports under $OUT (default /tmp/gemm-decode-completion), a summary on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/gemm-decode-completion}
mkdir -p "$OUT"
# shellcheck source=lib/decode_run.sh
source "$(dirname "$0")/lib/decode_run.sh"
ROUNDS=${ROUNDS:-2}
decode_machine
D="--shapes=16x8192x8192 --verify_fraction=0.01"
P="--rpc=packed --streams_per_channel=1"
S="--rpc=stream --streams_per_channel=8"
LEGACY="--serial_kernels=false --max_work_in_flight_ms_per_device=0 --poll_completion=false"
HOSTFN="--poll_completion=false"
for r in $(seq "$ROUNDS"); do
  decode_run "r$r-polled-d50" $P $D -- --max_queue_delay_us=50
  decode_run "r$r-hostfn-d50" $P $D -- --max_queue_delay_us=50 $HOSTFN
  decode_run "r$r-legacy-d50" $P $D -- --max_queue_delay_us=50 $LEGACY
  decode_run "r$r-polled-off" $P $D -- --batching=false
  decode_run "r$r-hostfn-off" $P $D -- --batching=false $HOSTFN
  decode_run "r$r-legacy-off" $P $D -- --batching=false $LEGACY
done
decode_run "stream-polled-d50" $S $D -- --max_queue_delay_us=50
decode_run "stream-hostfn-d50" $S $D -- --max_queue_delay_us=50 $HOSTFN
decode_run verify-polled-d0 $P --shapes=16x8192x8192 --verify_fraction=1 -- --max_queue_delay_us=0
python3 "$(dirname "$0")/lib/decode_summary.py" "$OUT"
