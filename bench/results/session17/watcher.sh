#!/usr/bin/env bash
# H200: --watcher_completion_bytes (units completed on the event watcher thread when they copy at
# most this much out of staging): 262144 (the old constant), 65536 (the new default), -1 (never),
# on decode without and with batching, A and D in the messages or over --shm.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/watcher; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
for r in 1 2; do
  for w in 262144 65536 -1; do
    decode_run msg-nobatch-w$w-r$r $DM -- --batching=false --watcher_completion_bytes=$w
  done
  for w in 262144 65536; do
    decode_run msg-w$w-r$r $DM -- --max_queue_delay_us=50 --watcher_completion_bytes=$w
    decode_run shm-w$w-r$r $DS -- --max_queue_delay_us=50 --watcher_completion_bytes=$w
  done
done
for w in 262144 65536; do
  decode_run shm-nobatch-w$w $DS -- --batching=false --watcher_completion_bytes=$w
  decode_run m1msg-nobatch-w$w --shapes=1x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false -- --batching=false --watcher_completion_bytes=$w
done
for f in $L/*.txt; do grep -q "^point" $f || continue; echo "== $(basename $f)"; grep -A4 "^point" $f | sed -n '2p;5p'; done > $L/points.txt
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf watcher.tgz watcher && rm -rf watcher
