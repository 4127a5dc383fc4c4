#!/usr/bin/env bash
# Decode load: work bound 1 ms (new default) vs 7 ms vs none, two interleaved rounds.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
export OUT=$OUT/ab; mkdir -p $OUT
source scripts/lib/decode_run.sh
decode_machine
D="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
for r in 1 2; do
  decode_run "r$r-w1" $D -- --max_queue_delay_us=50
  decode_run "r$r-w7" $D -- --max_queue_delay_us=50 --max_work_in_flight_ms_per_device=7
  decode_run "r$r-w0" $D -- --max_queue_delay_us=50 --max_work_in_flight_ms_per_device=0
done
for f in $OUT/r*.txt; do echo "== $f"; grep -A1 "^point" $f | sed -n '2p;5p'; done
cd $OUT/.. && tar czf ab.tgz ab && rm -rf ab
