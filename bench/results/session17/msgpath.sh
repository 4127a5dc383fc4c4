#!/usr/bin/env bash
# H200: the GPU suites on the new server code, then the response-sizing change A/B: the server of
# b87c418 (std::string::resize zero-fills every output before the copy) against the new one
# (ResizeUninitialized), alternating, on the loads whose outputs travel in the messages.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
mkdir -p $PWD/.old-bin && ln -sf $B/gemm_server_old $PWD/.old-bin/gemm_server
OLDPATH=$PWD/.old-bin:$PATH
L=$OUT/msgpath; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
UP="--shapes=1x28672x4096 --verify_fraction=0.01 --experts=8:2 --shm=false"
LG="--shapes=4096x4096x4096 --b=inline --shm=false --concurrency=4 --channels=1 --verify_fraction=0.05"
for r in 1 2; do
  PATH=$OLDPATH decode_run "decmsg-old-r$r" $DM -- --max_queue_delay_us=50
  decode_run "decmsg-new-r$r" $DM -- --max_queue_delay_us=50
  PATH=$OLDPATH decode_run "up-old-r$r" $UP -- --max_queue_delay_us=50
  decode_run "up-new-r$r" $UP -- --max_queue_delay_us=50
  PATH=$OLDPATH decode_run "large-old-r$r" $LG --
  decode_run "large-new-r$r" $LG --
done
decode_run "decmsg-new-nobatch" $DM -- --batching=false
for f in $L/*.txt; do grep -q "^point" $f || continue; echo "== $(basename $f)"; grep -A1 "^point" $f | sed -n '2p;5p'; grep verify $f; done > $L/points.txt
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf msgpath.tgz msgpath && rm -rf msgpath
