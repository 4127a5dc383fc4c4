#!/usr/bin/env bash
# H100: engine suites, then memcheck (with leak check) and racecheck over the engine tests that
# scripts/gpu_sanitize.sh runs (coalesced with C, expert groups included).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/h100; mkdir -p $L
date -u > $L/start.txt
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader > $L/gpu.txt
copy_batch_test > $L/copy_batch_test.log 2>&1; echo "copy_batch_test rc=$?" >> $L/summary.txt
engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_service_tests.log | tr '\n' ' ')" >> $L/summary.txt
F='EngineTest.SingleAndBatchInline*:EngineTest.GroupMixedShapes*:EngineTest.ResidentBBothLayouts*:EngineTest.CoalescedBatch*:EngineTest.StackedItems*:EngineTest.*Experts*'
timeout 200 compute-sanitizer --tool memcheck --leak-check full engine_gpu_tests --gtest_filter="$F" > $L/memcheck-engine.log 2>&1; echo "memcheck rc=$?" >> $L/summary.txt
timeout 200 compute-sanitizer --tool racecheck engine_gpu_tests --gtest_filter="$F" > $L/racecheck-engine.log 2>&1; echo "racecheck rc=$?" >> $L/summary.txt
for t in memcheck racecheck; do
  echo "$t: $(grep -E 'SUMMARY' $L/$t-engine.log | sed 's/^=* *//' | paste -sd ';' -); ours $(grep -E 'Race reported|Invalid|Error:' $L/$t-engine.log | grep -vc nvjet); nvjet races $(grep -E 'Race reported' $L/$t-engine.log | grep -c nvjet); $(grep -E '^\[  (PASSED|FAILED)' $L/$t-engine.log | tr '\n' ' ')" >> $L/summary.txt
done
date -u > $L/end.txt
cd $OUT && tar czf h100.tgz h100 && rm -rf h100
