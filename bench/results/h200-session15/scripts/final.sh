#!/usr/bin/env bash
# Fifteenth session, last code: GPU suites, MoE A/B against the old group configuration (same
# binary: 128x256 tiles, no cluster, whole A boxes, no split), decode / batched A/B against the
# session's start (gemm_bench_main = b8bdc2a), then bench/run_bench.sh (every set --check'ed).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/final-$gpu; mkdir -p $L
date -u > $L/start.txt
nvidia-smi > $L/smi.txt
kernel_gpu_tests > $L/kernel_gpu_tests.log 2>&1; echo "kernel_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/kernel_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
small_m_test > $L/small_m_test.log 2>&1; echo "small_m_test rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/small_m_test.log | tr '\n' ' ')" >> $L/summary.txt
engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_service_tests.log | tr '\n' ' ')" >> $L/summary.txt
for r in 1 2 3; do
  gemm_bench --set moe --layout both --tile 128x256 --cluster 1 --debug_flags 264 > $L/moe_old_$r.log 2>&1
  gemm_bench --set moe --layout both > $L/moe_new_$r.log 2>&1
done
for r in 1 2; do
  gemm_bench_main --set decode --layout both > $L/decode_main_$r.log 2>&1
  gemm_bench --set decode --layout both > $L/decode_new_$r.log 2>&1
  gemm_bench_main --set batched --layout both > $L/batched_main_$r.log 2>&1
  gemm_bench --set batched --layout both > $L/batched_new_$r.log 2>&1
done
OUT=$L/run_bench bench/run_bench.sh $B/gemm_bench > $L/run_bench.log 2>&1; echo "run_bench rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf final-$gpu.tgz final-$gpu && rm -rf final-$gpu
