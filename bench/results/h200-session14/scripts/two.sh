#!/usr/bin/env bash
# tma_a_tail and a_clip at the end of KernelParams (two) vs 55c537e (h) vs 5646491 (main).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/last-$gpu; mkdir -p $L
date -u > $L/start.txt
: no suites in this call
gemm_bench_two --set decode --layout both --check > $L/decode_check.log 2>&1
gemm_bench_two --set decode --layout both --shapes .session/sw-M --check > $L/M_check.log 2>&1
for r in 1 2 3; do
  for v in main h two; do
    gemm_bench_$v --set batched --layout both > $L/batched_${v}_$r.log 2>&1
    gemm_bench_$v --set decode --layout both --shapes .session/sw-M > $L/M_${v}_$r.log 2>&1
    gemm_bench_$v --set decode --layout both > $L/decode_${v}_$r.log 2>&1
  done
done
date -u > $L/end.txt
cd $OUT && tar czf last-$gpu.tgz last-$gpu && rm -rf last-$gpu
