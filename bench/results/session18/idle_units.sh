#!/usr/bin/env bash
# H200: --idle_units_per_device 0 (the GPU counts as idle when nothing it took is unfinished) vs 1
# (while at most one unit is: the next batch's copies overlap the last unit's kernel), decode over
# --shm at 8, 16 and 64 callers (default delay; 64 also at 50 us), two rounds in alternating order.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/idle-units; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
point() {  # point NAME LOADGEN... -- SERVER...
  local name=$1; shift
  if [ "$R" = 1 ]; then
    decode_run $name-u0-r$R "$@" --idle_units_per_device=0; decode_run $name-u1-r$R "$@" --idle_units_per_device=1
  else
    decode_run $name-u1-r$R "$@" --idle_units_per_device=1; decode_run $name-u0-r$R "$@" --idle_units_per_device=0
  fi
}
for R in 1 2; do
  point c8 $DS --concurrency=8 --
  point c16 $DS --concurrency=16 --
  point c64 $DS --
  point c64d50 $DS -- --max_queue_delay_us=50
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
head -17 $L/decode_summary.txt
cd $L/.. && tar czf idle-units.tgz idle-units && rm -rf idle-units
