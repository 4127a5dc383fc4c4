#!/usr/bin/env bash
# GPU suites on the last code, and the decode set --check'ed.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/suites-$gpu; mkdir -p $L
date -u > $L/start.txt
for t in kernel_gpu_tests small_m_test; do $t > $L/$t.log 2>&1; echo "$t rc=$?" >> $L/summary.txt; done
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$?" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$?" >> $L/summary.txt
grep -hE "^\[  (PASSED|FAILED)" $L/*.log >> $L/summary.txt
gemm_bench --set decode --layout both --check > $L/decode_check.log 2>&1; echo "decode check rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf suites-$gpu.tgz suites-$gpu && rm -rf suites-$gpu
