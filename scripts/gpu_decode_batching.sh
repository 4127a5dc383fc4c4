#!/usr/bin/env bash
# What batching buys on the decode load, on GPU 0: 16x8192x8192 against a resident [N,K] weight,
# 64 closed-loop callers on 8 channels, packed streams (GemmStreamPacked), 0.1% of the answers
# checked against float64. Per round (ROUNDS, default 3) and transport (MODES, default
# "ipc host messages") three servers: batching off, "tuned" (--max_queue_delay_us=20
# --idle_units_per_device=2) and the defaults. Transports:
#   ipc       A and D in the load generator's GPU memory (CUDA IPC: --shm --shm_device=0)
#   host      A and D in a POSIX shared-memory region (--shm)
#   messages  A and D in the gRPC messages
# Records decode-cuda-ipc, decode-host-shm and decode-messages in $RESULTS_DIR/<gpu>-service.json;
# raw reports, server logs and decode_summary.txt (server timing, CPU per request, GPU
# utilization) under $OUT. Prints batched / unbatched throughput per round.
set -uo pipefail
here=$(dirname "$0")
# shellcheck source=lib/gpu_env.sh
source "$here/lib/gpu_env.sh"
# shellcheck source=lib/decode_run.sh
source "$here/lib/decode_run.sh"
decode_machine
TUNED="--max_queue_delay_us=20 --idle_units_per_device=2"
MODES=${MODES:-ipc host messages}
ROUNDS=${ROUNDS:-3}
transport() {  # transport MODE: the load generator's flags that put A and D there
  case $1 in
    ipc) echo "--shm_device=0" ;;
    host) echo "" ;;
    messages) echo "--shm=false" ;;
    *) echo "gpu_decode_batching: unknown mode '$1' (ipc, host, messages)" >&2; exit 2 ;;
  esac
}
for m in $MODES; do transport "$m" >/dev/null || exit 2; done
for r in $(seq "$ROUNDS"); do
  for m in $MODES; do
    # shellcheck disable=SC2046,SC2086
    decode_run "$m-off-r$r" $DECODE_LOAD $(transport "$m") -- --batching=false
    # shellcheck disable=SC2046,SC2086
    decode_run "$m-tuned-r$r" $DECODE_LOAD $(transport "$m") -- $TUNED
    # shellcheck disable=SC2046,SC2086
    decode_run "$m-default-r$r" $DECODE_LOAD $(transport "$m") --
  done
done
python3 "$here/lib/decode_summary.py" "$OUT" >"$OUT/decode_summary.txt" 2>&1
declare -A load=([ipc]=decode-cuda-ipc [host]=decode-host-shm [messages]=decode-messages)
declare -A where=([ipc]="A and D in the client's GPU memory (CUDA IPC)"
  [host]="A and D in a POSIX shared-memory region of the client"
  [messages]="A and D in the gRPC messages")
for m in $MODES; do
  points=()
  for r in $(seq "$ROUNDS"); do
    points+=("--point=off-r$r:$OUT/$m-off-r$r.json:--batching=false"
      "--point=tuned-r$r:$OUT/$m-tuned-r$r.json:$TUNED" "--point=default-r$r:$OUT/$m-default-r$r.json:")
  done
  python3 "$here/lib/service_results.py" "$RESULTS_DIR" --load "${load[$m]}" \
    --what "16x8192x8192 against a resident [N,K] weight, 64 closed-loop callers on 8 channels, packed streams; ${where[$m]}; 0.1% of answers checked against float64" \
    --command "MODES=$m scripts/gpu_decode_batching.sh" "${points[@]}"
done
# shellcheck disable=SC2086
python3 - "$OUT" $MODES <<'PY'
import json, os, sys
out, modes = sys.argv[1], sys.argv[2:]
rate = {}
for f in os.listdir(out):
    if f.endswith(".json"):
        rate[f[:-5]] = json.load(open(os.path.join(out, f)))["points"][-1]["throughput_rps"]
for name in sorted(rate):
    if name.split("-")[0] in modes and "-off-" in name:
        for kind in ("tuned", "default"):
            on = name.replace("-off-", f"-{kind}-")
            if on in rate:
                print(f"{on}: {rate[on]:.0f} / {rate[name]:.0f} = {rate[on] / rate[name]:.2f}x")
PY
