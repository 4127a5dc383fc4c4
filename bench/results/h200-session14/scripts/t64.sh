#!/usr/bin/env bash
# 64-column decode tiles (64x64 one warpgroup, 128x64): correctness and timing vs the heuristics.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/t64-$gpu; mkdir -p $L
date -u > $L/start.txt
kernel_gpu_tests --gtest_filter='Sm90Small.EveryTileShape' > $L/everytile.log 2>&1; echo "everytile rc=$?" >> $L/summary.txt
gemm_bench --set decode --layout both --shapes .session/sw-G --tile 64x64 --check > $L/G_check.log 2>&1
gemm_bench --set decode --layout both --shapes .session/sw-H --tile 128x64 --check > $L/H_check.log 2>&1
for r in 1 2 3; do
  gemm_bench --set decode --layout both --shapes .session/sw-G > $L/G_def_$r.log 2>&1
  for st in 4 5 6 8; do gemm_bench --set decode --layout both --shapes .session/sw-G --tile 64x64 --stages $st > $L/G_t$st\_$r.log 2>&1; done
  gemm_bench --set decode --layout both --shapes .session/sw-H > $L/H_def_$r.log 2>&1
  for st in 4 5 6 8; do gemm_bench --set decode --layout both --shapes .session/sw-H --tile 128x64 --stages $st > $L/H_t$st\_$r.log 2>&1; done
done
date -u > $L/end.txt
cd $OUT && tar czf t64-$gpu.tgz t64-$gpu && rm -rf t64-$gpu
