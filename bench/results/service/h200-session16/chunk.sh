#!/usr/bin/env bash
# H200: host copy chunk size A/B (1 MiB default vs 256 / 128 KiB) on the loads whose operands
# travel in the messages: decode (A and D, 2 MiB each way per unit), expert steps, large inline.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/chunk; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
host_copier_test > $L/host_copier_test.log 2>&1; echo "host_copier_test rc=$?" >> $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
UP="--shapes=1x28672x4096 --verify_fraction=0.01 --experts=8:2 --shm=false"
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
LG="--shapes=4096x4096x4096 --b=inline --shm=false --concurrency=4 --channels=1 --verify_fraction=0.05"
for r in 1 2; do
  for c in 1048576 262144 131072; do
    decode_run "decmsg-c$c-r$r" $DM -- --max_queue_delay_us=50 --host_copy_chunk_bytes=$c
  done
  for c in 1048576 262144; do
    decode_run "up-c$c-r$r" $UP -- --max_queue_delay_us=50 --host_copy_chunk_bytes=$c
  done
done
for c in 1048576 262144; do
  decode_run "large-c$c" $LG -- --host_copy_chunk_bytes=$c
done
for f in $L/*.txt; do grep -q "^point" $f || continue; echo "== $(basename $f)"; grep -A1 "^point" $f | sed -n '2p;5p'; grep verify $f; done > $L/points.txt
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf chunk.tgz chunk && rm -rf chunk
