#!/usr/bin/env bash
# Decode-stage rule: A/B against main, plus the 128x128 kn stage question.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/ab-$gpu; mkdir -p $L
date -u > $L/start.txt
for r in 1 2 3; do
  gemm_bench_main --set decode --layout both > $L/decode_main_$r.log 2>&1
  gemm_bench --set decode --layout both > $L/decode_new_$r.log 2>&1
  gemm_bench --set decode --layout kn --shapes .session/sw-E --stages 5 > $L/E_s5_$r.log 2>&1
  gemm_bench --set decode --layout kn --shapes .session/sw-E --stages 6 > $L/E_s6_$r.log 2>&1
  gemm_bench --set decode --layout both --shapes .session/sw-F > $L/F_new_$r.log 2>&1
  gemm_bench_main --set decode --layout both --shapes .session/sw-F > $L/F_main_$r.log 2>&1
done
gemm_bench --set decode --layout both --check > $L/decode_check.log 2>&1
date -u > $L/end.txt
cd $OUT && tar czf ab-$gpu.tgz ab-$gpu && rm -rf ab-$gpu
