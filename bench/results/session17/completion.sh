#!/usr/bin/env bash
# H200: completion threads per GPU (4 / 8 default / 16) on decode in the messages (batched and
# not) and over --shm (batched): the hand-off to a completion thread took 100-250 us per unit.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/completion; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
for c in 8 4 16; do
  decode_run msg-nobatch-c$c $DM -- --batching=false --completion_threads_per_device=$c
  decode_run msg-c$c $DM -- --max_queue_delay_us=50 --completion_threads_per_device=$c
  decode_run shm-c$c $DS -- --max_queue_delay_us=50 --completion_threads_per_device=$c
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf completion.tgz completion && rm -rf completion
