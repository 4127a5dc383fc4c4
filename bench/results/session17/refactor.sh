#!/usr/bin/env bash
# H200: the executor split (unit planning moved to server/gpu/unit_plan.cc): the engine suites,
# memcheck over the engine tests, and one point of each decode load against the figures before.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/refactor; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
for t in unit_plan_test copy_batch_test engine_gpu_tests; do
  timeout 240 $t > $L/$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$t.log | tr '\n' ' ')" >> $L/summary.txt
done
GEMM_SERVER_BINARY=$B/gemm_server timeout 240 engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_service_tests.log | tr '\n' ' ')" >> $L/summary.txt
F='EngineTest.SingleAndBatchInline*:EngineTest.GroupMixedShapes*:EngineTest.ResidentBBothLayouts*:EngineTest.CoalescedBatch*:EngineTest.StackedItems*:EngineTest.*Expert*'
timeout 240 compute-sanitizer --tool memcheck --leak-check full engine_gpu_tests --gtest_filter="$F" > $L/memcheck-engine.log 2>&1
echo "memcheck-engine rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|^\[  (PASSED|FAILED)' $L/memcheck-engine.log | tr '\n' ' ')" >> $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
decode_run msg-nobatch $DM -- --batching=false
decode_run shm $DS -- --max_queue_delay_us=50
decode_run up --shapes=1x28672x4096 --verify_fraction=0.01 --experts=8:2 --shm=false -- --max_queue_delay_us=50
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf refactor.tgz refactor && rm -rf refactor
