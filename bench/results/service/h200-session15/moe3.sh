#!/usr/bin/env bash
# Expert groups batched across requests: engine suites (with the new tests) on H200.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/moe3; mkdir -p $L
date -u > $L/start.txt
engine_gpu_tests --gtest_filter='*Expert*' > $L/expert_tests.log 2>&1; echo "expert tests rc=$?" >> $L/summary.txt
engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_service_tests.log | tr '\n' ' ')" >> $L/summary.txt
compute-sanitizer --tool memcheck --leak-check full engine_gpu_tests --gtest_filter='*Expert*' > $L/memcheck_expert.log 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' $L/memcheck_expert.log | tr '\n' ' ')" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf moe3.tgz moe3 && rm -rf moe3
