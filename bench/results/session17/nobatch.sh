#!/usr/bin/env bash
# H200: why decode with A and D in the messages and batching off runs at ~8.7k req/s with ~2.9 ms
# of queueing in the server, against ~21k over --shm: the same load under engine settings.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/nobatch; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
decode_run shm-default $DS -- --batching=false
decode_run msg-default $DM -- --batching=false
decode_run msg-wif0 $DM -- --batching=false --max_work_in_flight_ms_per_device=0
decode_run msg-streams8 $DM -- --batching=false --streams_per_device=8
decode_run msg-launch8 $DM -- --batching=false --launch_threads_per_device=8
decode_run msg-parallelk $DM -- --batching=false --serial_kernels=false
decode_run msg-unary $DM --rpc=unary -- --batching=false
decode_run msg-default-again $DM -- --batching=false
for f in $L/*.txt; do grep -q "^point" $f || continue; echo "== $(basename $f)"; grep -A4 "^point" $f | sed -n '2p;5p'; done > $L/points.txt
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf nobatch.tgz nobatch && rm -rf nobatch
