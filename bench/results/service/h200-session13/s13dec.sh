#!/usr/bin/env bash
# Decode service load with the final build (polled points, 2 rounds) + SASS checks.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
export OUT=$OUT/dec; mkdir -p $OUT
# SASS: HGMMA in every WGMMA instantiation, no local memory.
for f in .session/objs/*.xz; do
  o=/tmp/$(basename $f .xz); xz -dc $f > $o
  n=$(basename $o)
  cuobjdump -sass $o > /tmp/$n.sass 2>&1
  echo "$n: HGMMA $(grep -c HGMMA /tmp/$n.sass) HMMA $(grep -c 'HMMA' /tmp/$n.sass) LDL $(grep -cE '\bLDL\b' /tmp/$n.sass) STL $(grep -cE '\bSTL\b' /tmp/$n.sass) kernels $(grep -c 'Function :' /tmp/$n.sass) sm90 $(grep -c 'arch = sm_90a' /tmp/$n.sass)" >> $OUT/sass_summary.txt
  # per-kernel: each sm_90a WGMMA kernel has HGMMA
  awk '/Function :/{f=$3} /HGMMA/{c[f]++} END{for(k in c) print c[k], k}' /tmp/$n.sass | sort -n | head -3 >> $OUT/sass_summary.txt
done
source scripts/lib/decode_run.sh
decode_machine
D="--shapes=16x8192x8192 --verify_fraction=0.01"
P="--rpc=packed --streams_per_channel=1"
for r in 1 2; do
  decode_run "r$r-polled-d50" $P $D -- --max_queue_delay_us=50
  decode_run "r$r-polled-off" $P $D -- --batching=false
done
decode_run verify-polled-d0 $P --shapes=16x8192x8192 --verify_fraction=1 -- --max_queue_delay_us=0
python3 scripts/lib/decode_summary.py "$OUT" > $OUT/summary.txt 2>&1
cd $(dirname $OUT) && tar czf dec.tgz dec && rm -rf dec
