#!/usr/bin/env bash
# H100, final server (--idle_units_per_device default 1): the engine suites, then decode over
# --shm with --idle_units_per_device 0 vs 1 at 8, 16 and 64 callers (default delay) and 64 at
# 50 us, one round, alternating.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/h100-units; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
suite() {  # suite NAME [env...]
  local t=$1; shift
  env "$@" timeout 240 $t > $L/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$t.log | tr '\n' ' ')" >> $L/summary.txt
}
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
decode_run c8-u0 $DS --concurrency=8 -- --idle_units_per_device=0
decode_run c8-u1 $DS --concurrency=8 --
decode_run c16-u1 $DS --concurrency=16 --
decode_run c16-u0 $DS --concurrency=16 -- --idle_units_per_device=0
decode_run c64-u0 $DS -- --idle_units_per_device=0
decode_run c64-u1 $DS --
decode_run c64d50-u1 $DS -- --max_queue_delay_us=50
decode_run c64d50-u0 $DS -- --max_queue_delay_us=50 --idle_units_per_device=0
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
head -9 $L/decode_summary.txt
cd $L/.. && tar czf h100-units.tgz h100-units && rm -rf h100-units
