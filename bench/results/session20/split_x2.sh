#!/usr/bin/env bash
# Session 20, two GPUs: the expert-group tests after DeviceSplit: the backend-level expert tests
# (now on GPU 0 explicitly), the multi-GPU routing test, and the new service test of a
# mixture-of-experts step over experts the server placed on both GPUs.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/split-x2; mkdir -p $L
nvidia-smi --query-gpu=index,name --format=csv,noheader > $L/gpu.txt
timeout 200 engine_gpu_tests --gtest_filter='*Expert*:*MultiGpu*' > $L/engine_gpu_tests.log 2>&1
echo "engine_gpu_tests rc=$?" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server timeout 200 engine_gpu_service_tests \
  --gtest_filter='*ExpertStepAcrossGpus*' > $L/engine_gpu_service_tests.log 2>&1
echo "engine_gpu_service_tests rc=$?" >> $L/summary.txt
cat $L/gpu.txt $L/summary.txt; grep -hE "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|error" $L/*.log | head -30
