#!/usr/bin/env bash
# Final code of session 18 on one GPU: the GPU suites, compute-sanitizer memcheck (leak check)
# and racecheck over the engine's tests, the decode batching ratio over --shm, and a sweep of the
# batching delay with idle dispatch at 8 and 64 callers (and 1 caller at the default).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/final-$gpu; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
suite() {  # suite NAME [env...]
  local t=$1; shift
  env "$@" timeout 240 $t > $L/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$t.log | tr '\n' ' ')" >> $L/summary.txt
}
suite kernel_gpu_tests
suite small_m_test
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
suite batcher_test
suite unit_plan_test
F='EngineTest.SingleAndBatchInline*:EngineTest.GroupMixedShapes*:EngineTest.ResidentBBothLayouts*:EngineTest.CoalescedBatch*:EngineTest.StackedItems*:EngineTest.*Expert*:EngineTest.ExecutorReportsIdle*'
timeout 240 compute-sanitizer --tool memcheck --leak-check full engine_gpu_tests --gtest_filter="$F" > $L/memcheck-engine.log 2>&1
echo "memcheck-engine rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|^\[  (PASSED|FAILED)' $L/memcheck-engine.log | tr '\n' ' ')" >> $L/summary.txt
timeout 240 compute-sanitizer --tool racecheck engine_gpu_tests --gtest_filter="$F" > $L/racecheck-engine.log 2>&1
echo "racecheck-engine rc=$? ours=$(grep -E 'Race reported|Error:' $L/racecheck-engine.log | grep -vc nvjet) nvjet=$(grep -E 'Race reported' $L/racecheck-engine.log | grep -c nvjet) $(grep -E 'RACECHECK SUMMARY|^\[  (PASSED|FAILED)' $L/racecheck-engine.log | tr '\n' ' ')" >> $L/summary.txt
cat $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
decode_run shm-nobatch $DS -- --batching=false
for d in 0 25 50 100; do decode_run c64-d$d $DS -- --max_queue_delay_us=$d; done
decode_run c64-d200 $DS --
for d in 0 50; do decode_run c8-d$d $DS --concurrency=8 -- --max_queue_delay_us=$d; done
decode_run c8-d200 $DS --concurrency=8 --
decode_run c1-d200 $DS --concurrency=1 --
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cat $L/decode_summary.txt | head -14
cd $L/.. && tar czf final-$gpu.tgz final-$gpu && rm -rf final-$gpu
