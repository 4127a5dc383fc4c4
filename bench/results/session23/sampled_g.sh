#!/usr/bin/env bash
# Session 23 (one GPU), 6eef210: GPU phases timed on every 8th unit (--gpu_timing_every, new
# default). Suites: engine_gpu_tests (with OnlyEveryNthUnitTimesItsGpuPhases),
# engine_gpu_service_tests, device_copy_gpu_test. Then three rounds of the decode ratio: batching
# off, delay 20 / idle 2, defaults, and delay 20 / idle 2 with every unit timed
# (--gpu_timing_every=1, the server as before).
NAME=sampled_g
source scripts/lib/device_call.sh
suite device_copy_gpu_test
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat "$L/summary.txt"
grep -E "^\[ +FAILED" "$L"/*.log | head
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
ON="--max_queue_delay_us=20 --idle_units_per_device=2"
for r in 1 2 3; do
  decode_run ipc-off-r$r $DS -- --batching=false
  decode_run ipc-on-r$r $DS -- $ON
  decode_run ipc-default-r$r $DS --
  decode_run ipc-on-timed1-r$r $DS -- $ON --gpu_timing_every=1
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
head -16 "$L/decode_summary.txt"
python3 - "$L" <<'PY' | tee "$L/ratio.txt"
import json, os, sys
d = sys.argv[1]
rate = {f[:-5]: json.load(open(os.path.join(d, f)))["points"][-1]["throughput_rps"]
        for f in os.listdir(d) if f.endswith(".json")}
for name in sorted(rate):
    if "-off-" in name:
        for kind in ("on", "default", "on-timed1"):
            on = name.replace("-off-", f"-{kind}-")
            if on in rate:
                print(f"{on}: {rate[on]:.0f} / {rate[name]:.0f} = {rate[on] / rate[name]:.2f}x")
PY
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
