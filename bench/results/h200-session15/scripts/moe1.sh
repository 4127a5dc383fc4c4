#!/usr/bin/env bash
# MoE groups: the new group heuristics and A boxes that stop at M, against the old configuration
# (128x256, no cluster, whole A boxes), plus tile/stage sweeps; decode / batched A/B vs main.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/moe1-$gpu; mkdir -p $L
date -u > $L/start.txt
nvidia-smi > $L/smi.txt
kernel_gpu_tests --gtest_filter='Sm90Grouped*:Sm90Small*' > $L/grouped_tests.log 2>&1
echo "grouped tests rc=$?" >> $L/summary.txt
gemm_bench --set moe --layout both --check --json > $L/moe_check.jsonl 2> $L/moe_check.log
echo "moe check rc=$?" >> $L/summary.txt
for r in 1 2; do
  gemm_bench --set moe --layout both --json > $L/moe_new_$r.jsonl 2> $L/moe_new_$r.log
  gemm_bench --set moe --layout both --tile 128x256 --cluster 1 --debug_flags 256 > $L/moe_old_$r.log 2>&1
  gemm_bench --set moe --layout both --tile 128x256 --cluster 1 > $L/moe_128clip_$r.log 2>&1
  gemm_bench --set moe --layout both --tile 64x256 --debug_flags 256 > $L/moe_64whole_$r.log 2>&1
  for s in 3 4; do gemm_bench --set moe --layout both --tile 64x256 --stages $s > $L/moe_64x256_s${s}_$r.log 2>&1; done
  for s in 4 6 8; do gemm_bench --set moe --layout both --tile 64x128 --stages $s > $L/moe_64x128_s${s}_$r.log 2>&1; done
done
for r in 1 2; do
  gemm_bench_main --set decode --layout both > $L/decode_main_$r.log 2>&1
  gemm_bench --set decode --layout both > $L/decode_new_$r.log 2>&1
  gemm_bench_main --set batched --layout both > $L/batched_main_$r.log 2>&1
  gemm_bench --set batched --layout both > $L/batched_new_$r.log 2>&1
done
gemm_bench --set grouped --layout both --check > $L/grouped_check.log 2>&1
echo "grouped check rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf moe1-$gpu.tgz moe1-$gpu && rm -rf moe1-$gpu
