#!/usr/bin/env bash
# Decode load (resident 8192x8192 [N,K] weight, M=16, 64 closed-loop callers, --shm, 8 channels)
# over GemmStream (one stream per caller, one request per message) against GemmStreamPacked
# (STREAMS streams per channel shared by the callers, default 1: the requests queued while a
# stream's write is out share its next message), batching on and off, ROUNDS interleaved rounds
# (default 2). Run ON THE GPU MACHINE from a device bundle with gemm_server, gemm_client and
# gemm_loadgen on PATH (see scripts/gpu_service_bench.sh). GPU 0 only; reports under $OUT
# (default /tmp/gemm-decode-packed), a summary table on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/gemm-decode-packed}
mkdir -p "$OUT"
# shellcheck source=lib/decode_run.sh
source "$(dirname "$0")/lib/decode_run.sh"
ROUNDS=${ROUNDS:-2}
STREAMS=${STREAMS:-1}
decode_machine
D="--shapes=16x8192x8192 --verify_fraction=0.01"
S="--rpc=stream --streams_per_channel=8"
P="--rpc=packed --streams_per_channel=$STREAMS"
for r in $(seq "$ROUNDS"); do
  decode_run "r$r-ceiling-packed" $P --shapes=16x128x128 --verify_fraction=0.01 --
  decode_run "r$r-stream-d25" $S $D -- --max_queue_delay_us=25
  decode_run "r$r-packed-d25" $P $D -- --max_queue_delay_us=25
  decode_run "r$r-packed-d50" $P $D -- --max_queue_delay_us=50
  decode_run "r$r-stream-off" $S $D -- --batching=false
  decode_run "r$r-packed-off" $P $D -- --batching=false
done
decode_run verify-packed-d0 $P --shapes=16x8192x8192 --verify_fraction=1 -- --max_queue_delay_us=0
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
print(f"{'run':26} {'req/s':>9} {'mean ms':>8} {'req/msg':>8} {'batch':>6} {'compute us':>10} {'verified':>9}")
for f in sorted(os.listdir(out)):
    if not f.endswith(".json"):
        continue
    p = json.load(open(os.path.join(out, f)))["points"][0]
    st = p["server_timing_us"]
    rpm = p["stream_requests"] / max(1, p["stream_messages"])
    print(f"{f[:-5]:26} {p['throughput_rps']:9.0f} {p['latency_ms']['mean']:8.2f} {rpm:8.2f} "
          f"{st['batch_requests']:6.1f} {st['compute']:10.1f} "
          f"{p['verify']['checked']:>5}/{p['verify']['mismatches']}")
PY
