#!/usr/bin/env bash
# Final build: GPU suites and bench/run_bench.sh (every row --check'ed).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/final-$gpu; mkdir -p $L
date -u > $L/start.txt
for t in kernel_gpu_tests small_m_test; do $t > $L/$t.log 2>&1; echo "$t rc=$?" >> $L/summary.txt; done
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$?" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$?" >> $L/summary.txt
mkdir -p $L/run_bench && OUT=$L/run_bench bench/run_bench.sh $B/gemm_bench > $L/run_bench.log 2>&1; echo "run_bench rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf final.tgz final-$gpu && rm -rf final-$gpu
