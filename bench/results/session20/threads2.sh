#!/usr/bin/env bash
# Session 20, one GPU: launch x completion threads per GPU 4x8 (default), 2x4, 2x2, 1x2 on three
# loads over --shm (packed streams, 8 channels): decode 16x8192x8192 at 64 callers batched
# (default delay) and with batching off, and 4096^3 with A and B in shared memory at 4 callers.
# Two rounds, the second in reverse order.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/threads2-$gpu; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
P="--rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
configs="4x8 2x4 2x2 1x2"
rev=$(echo $configs | tr ' ' '\n' | tac | tr '\n' ' ')
for r in 1 2; do
  list=$configs; [ $r = 2 ] && list=$rev
  for c in $list; do
    T="--launch_threads_per_device=${c%x*} --completion_threads_per_device=${c#*x}"
    decode_run dec-t$c-r$r --shapes=16x8192x8192 $P -- $T
    decode_run off-t$c-r$r --shapes=16x8192x8192 $P -- $T --batching=false
    decode_run big-t$c-r$r --shapes=4096x4096x4096 --b=inline --concurrency=4 $P -- $T
  done
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
head -26 $L/decode_summary.txt
cd $L/.. && tar czf threads2-$gpu.tgz threads2-$gpu && rm -rf threads2-$gpu
