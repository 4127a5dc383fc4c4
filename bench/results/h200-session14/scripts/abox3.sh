#!/usr/bin/env bash
# A tail map variants: main (e05b2d8) vs v1 (per-k-block check) vs h (per-unit check).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/abox3-$gpu; mkdir -p $L
date -u > $L/start.txt
gemm_bench_h --set decode --layout both --shapes .session/sw-M --check > $L/M_check.log 2>&1
for r in 1 2 3; do
  for v in main v1 h; do
    gemm_bench_$v --set batched --layout both > $L/batched_${v}_$r.log 2>&1
    gemm_bench_$v --set decode --layout both --shapes .session/sw-M > $L/M_${v}_$r.log 2>&1
  done
done
for v in main h; do gemm_bench_$v --set large --layout both > $L/large_${v}_1.log 2>&1; done
for v in h main; do gemm_bench_$v --set large --layout both > $L/large_${v}_2.log 2>&1; done
date -u > $L/end.txt
cd $OUT && tar czf abox3-$gpu.tgz abox3-$gpu && rm -rf abox3-$gpu
