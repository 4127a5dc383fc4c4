#!/usr/bin/env bash
# 128x128 / B [K,N] at 5 stages (new) vs 55c537e (h): decode set, sets E and M, three rounds.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/e5ab-$gpu; mkdir -p $L
date -u > $L/start.txt
gemm_bench_new --set decode --layout both --check > $L/decode_check.log 2>&1
gemm_bench_new --set decode --layout kn --shapes .session/sw-E --check > $L/E_check.log 2>&1
for r in 1 2 3; do
  for v in h new; do
    gemm_bench_$v --set decode --layout both > $L/decode_${v}_$r.log 2>&1
    gemm_bench_$v --set decode --layout kn --shapes .session/sw-E > $L/E_${v}_$r.log 2>&1
    gemm_bench_$v --set decode --layout both --shapes .session/sw-M > $L/M_${v}_$r.log 2>&1
  done
done
date -u > $L/end.txt
cd $OUT && tar czf e5ab-$gpu.tgz e5ab-$gpu && rm -rf e5ab-$gpu
