#!/usr/bin/env bash
# The decode batching bar of issue #4 (batching on / off), run ON THE GPU MACHINE from a device
# bundle packed as .device-bundle-pack/s.txz with gemm_server, gemm_client and gemm_loadgen:
#   OUT=... bash scripts/gpu_decode_ratio.sh
# Decode 16x8192x8192 against a resident [N,K] weight, 64 closed-loop callers on 8 packed streams,
# 0.1% of answers verified against float64. ROUNDS rounds (default 3), each batching off, then on
# with ON_FLAGS (default --max_queue_delay_us=20 --idle_units_per_device=2), then on at the
# defaults; with A and D in the load generator's GPU memory (CUDA IPC, --shm_device=0) and, when
# HOST=1, in host shared memory too. Reports and decode_summary.txt under $OUT/ratio-<gpu>/.
set -u
NAME=ratio
source scripts/lib/device_call.sh
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001"
ON=${ON_FLAGS:---max_queue_delay_us=20 --idle_units_per_device=2}
modes="ipc"
[ "${HOST:-0}" = 1 ] && modes="ipc host"
for r in $(seq "${ROUNDS:-3}"); do
  for m in $modes; do
    where=""
    [ "$m" = ipc ] && where="--shm_device=0"
    decode_run "$m-off-r$r" $DS $where -- --batching=false
    decode_run "$m-on-r$r" $DS $where -- $ON
    decode_run "$m-default-r$r" $DS $where --
  done
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
# On / off per mode and round, from the reports' throughput.
python3 - "$L" <<'PY' | tee "$L/ratio.txt"
import json, os, sys
d = sys.argv[1]
rate = {}
for f in os.listdir(d):
    if f.endswith(".json"):
        rate[f[:-5]] = json.load(open(os.path.join(d, f)))["points"][-1]["throughput_rps"]
for name in sorted(rate):
    if "-off-" in name:
        for kind in ("on", "default"):
            on = name.replace("-off-", f"-{kind}-")
            if on in rate:
                print(f"{on}: {rate[on]:.0f} / {rate[name]:.0f} = {rate[on] / rate[name]:.2f}x")
PY
date -u >"$L/end.txt"
head -20 "$L/decode_summary.txt"
