#!/usr/bin/env bash
# A tail map: suites, M sweep / decode / batched vs e05b2d8 (gemm_bench_main).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/abox2-$gpu; mkdir -p $L
date -u > $L/start.txt
kernel_gpu_tests > $L/kernel_gpu_tests.log 2>&1; echo "kernel_gpu_tests rc=$?" >> $L/summary.txt; grep -E "PASSED|FAILED" $L/kernel_gpu_tests.log >> $L/summary.txt
gemm_bench --set decode --layout both --shapes .session/sw-M --check > $L/M_check.log 2>&1
gemm_bench --set decode --layout both --check > $L/decode_check.log 2>&1
for r in 1 2 3; do
  gemm_bench_main --set decode --layout both --shapes .session/sw-M > $L/M_main_$r.log 2>&1
  gemm_bench --set decode --layout both --shapes .session/sw-M > $L/M_new_$r.log 2>&1
  gemm_bench_main --set decode --layout both > $L/decode_main_$r.log 2>&1
  gemm_bench --set decode --layout both > $L/decode_new_$r.log 2>&1
  gemm_bench_main --set batched --layout both > $L/batched_main_$r.log 2>&1
  gemm_bench --set batched --layout both > $L/batched_new_$r.log 2>&1
done
date -u > $L/end.txt
cd $OUT && tar czf abox2-$gpu.tgz abox2-$gpu && rm -rf abox2-$gpu
