#!/usr/bin/env bash
# Two H200s, final build: engine suites with the multi-GPU test, kernel tests on GPU 1, and
# one- vs two-GPU service throughput (scripts/gpu_multi_gpu_bench.sh).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/x2; mkdir -p $L
date -u > $L/start.txt
nvidia-smi --query-gpu=index,name,clocks.sm --format=csv > $L/smi.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$?" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$?" >> $L/summary.txt
CUDA_VISIBLE_DEVICES=1 kernel_gpu_tests > $L/kernel_gpu_tests_gpu1.log 2>&1; echo "kernel_gpu_tests (GPU 1) rc=$?" >> $L/summary.txt
mkdir -p $L/multi && OUT=$L/multi timeout 400 scripts/gpu_multi_gpu_bench.sh > $L/multi.log 2>&1; echo "multi_gpu_bench rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf x2.tgz x2 && rm -rf x2
