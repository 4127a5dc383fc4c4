#!/usr/bin/env bash
# Final code of the session on one GPU: the GPU suites, compute-sanitizer memcheck (with leak
# check) and racecheck over the engine's tests, and the watcher A/B on decode in the messages.
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
F='EngineTest.SingleAndBatchInline*:EngineTest.GroupMixedShapes*:EngineTest.ResidentBBothLayouts*:EngineTest.CoalescedBatch*:EngineTest.StackedItems*:EngineTest.*Expert*'
timeout 240 compute-sanitizer --tool memcheck --leak-check full engine_gpu_tests --gtest_filter="$F" > $L/memcheck-engine.log 2>&1
echo "memcheck-engine rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY|^\[  (PASSED|FAILED)' $L/memcheck-engine.log | tr '\n' ' ')" >> $L/summary.txt
timeout 240 compute-sanitizer --tool racecheck engine_gpu_tests --gtest_filter="$F" > $L/racecheck-engine.log 2>&1
echo "racecheck-engine rc=$? ours=$(grep -E 'Race reported|Error:' $L/racecheck-engine.log | grep -vc nvjet) nvjet=$(grep -E 'Race reported' $L/racecheck-engine.log | grep -c nvjet) $(grep -E 'RACECHECK SUMMARY|^\[  (PASSED|FAILED)' $L/racecheck-engine.log | tr '\n' ' ')" >> $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
for w in 262144 65536; do
  decode_run msg-nobatch-w$w $DM -- --batching=false --watcher_completion_bytes=$w
done
decode_run msg $DM -- --max_queue_delay_us=50
decode_run shm $DS -- --max_queue_delay_us=50
decode_run shm-nobatch $DS -- --batching=false
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf final-$gpu.tgz final-$gpu && rm -rf final-$gpu
