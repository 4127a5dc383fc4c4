#!/usr/bin/env bash
# 128x128 decode tiles at 5 vs 6 stages after the A tail map (final build), both layouts.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/e5-$gpu; mkdir -p $L
date -u > $L/start.txt
for r in 1 2 3; do
  for st in 5 6; do gemm_bench --set decode --layout both --shapes .session/sw-E --stages $st > $L/E_s${st}_$r.log 2>&1; done
done
date -u > $L/end.txt
cd $OUT && tar czf e5-$gpu.tgz e5-$gpu && rm -rf e5-$gpu
