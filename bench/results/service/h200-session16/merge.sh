#!/usr/bin/env bash
# H200: engine suites, then merged copies on / off (MoE steps and decode with A in the messages).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/merge; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
copy_batch_test > $L/copy_batch_test.log 2>&1; echo "copy_batch_test rc=$?" >> $L/summary.txt
engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_service_tests.log | tr '\n' ' ')" >> $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
UP="--shapes=1x28672x4096 --verify_fraction=0.01 --experts=8:2 --shm=false"
DN="--shapes=1x4096x14336 --verify_fraction=0.01 --experts=8:2 --shm=false"
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
for r in 1 2; do
  decode_run "up-on-r$r" $UP -- --max_queue_delay_us=50
  decode_run "up-off-r$r" $UP -- --max_queue_delay_us=50 --merge_copies=false
  decode_run "decmsg-on-r$r" $DM -- --max_queue_delay_us=50
  decode_run "decmsg-off-r$r" $DM -- --max_queue_delay_us=50 --merge_copies=false
done
decode_run "down-on" $DN -- --max_queue_delay_us=50
decode_run "down-off" $DN -- --max_queue_delay_us=50 --merge_copies=false
decode_run "up-nobatch" $UP -- --batching=false
decode_run "down-nobatch" $DN -- --batching=false
decode_run "decshm-on" $DS -- --max_queue_delay_us=50
decode_run "decmsg-nobatch" $DM -- --batching=false
for f in $L/*.txt; do grep -q "^point" $f || continue; echo "== $(basename $f)"; grep -A1 "^point" $f | sed -n '2p;5p'; grep verify $f; done > $L/points.txt
date -u > $L/end.txt
cd $L/.. && tar czf merge.tgz merge && rm -rf merge
