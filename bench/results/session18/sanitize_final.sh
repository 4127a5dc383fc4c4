#!/usr/bin/env bash
# H100, final code (e66097b, --idle_units_per_device default 1): compute-sanitizer memcheck (leak
# check) and racecheck over the engine's tests, and the engine suites once more.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/sanitize-final; mkdir -p $L
date -u > $L/start.txt
F='EngineTest.SingleAndBatchInline*:EngineTest.GroupMixedShapes*:EngineTest.ResidentBBothLayouts*:EngineTest.CoalescedBatch*:EngineTest.StackedItems*:EngineTest.*Expert*:EngineTest.ExecutorReportsIdle*:EngineTest.PoolReturnsToIdle*'
timeout 240 compute-sanitizer --tool memcheck --leak-check full engine_gpu_tests --gtest_filter="$F" > $L/memcheck-engine.log 2>&1
echo "memcheck-engine rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|^\[  (PASSED|FAILED)' $L/memcheck-engine.log | tr '\n' ' ')" >> $L/summary.txt
timeout 240 compute-sanitizer --tool racecheck engine_gpu_tests --gtest_filter="$F" > $L/racecheck-engine.log 2>&1
echo "racecheck-engine rc=$? ours=$(grep -E 'Race reported|Error:' $L/racecheck-engine.log | grep -vc nvjet) nvjet=$(grep -E 'Race reported' $L/racecheck-engine.log | grep -c nvjet) $(grep -E 'RACECHECK SUMMARY|^\[  (PASSED|FAILED)' $L/racecheck-engine.log | tr '\n' ' ')" >> $L/summary.txt
timeout 120 engine_gpu_tests > $L/engine_gpu_tests.log 2>&1
echo "engine_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
date -u > $L/end.txt
cat $L/summary.txt
cd $OUT && tar czf sanitize-final.tgz sanitize-final && rm -rf sanitize-final
