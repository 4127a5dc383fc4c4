#!/usr/bin/env bash
# Session 20, one GPU: launch and completion threads per GPU (main's server, a5c4390 code),
# decode 16x8192x8192 over --shm at 64 callers (packed streams, 8 channels, default delay 50 us),
# two rounds, the second in reverse order; batching off once as the ratio's baseline.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/threads-$gpu; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
decode_run nobatch $DS -- --batching=false
configs="4x8 2x8 4x4 2x4 1x4 2x2 1x2"
rev=$(echo $configs | tr ' ' '\n' | tac | tr '\n' ' ')
for r in 1 2; do
  list=$configs; [ $r = 2 ] && list=$rev
  for c in $list; do
    decode_run t$c-r$r $DS -- --launch_threads_per_device=${c%x*} --completion_threads_per_device=${c#*x}
  done
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
head -17 $L/decode_summary.txt
cd $L/.. && tar czf threads-$gpu.tgz threads-$gpu && rm -rf threads-$gpu
