#!/usr/bin/env bash
# H200, final server code: engine suites, CPU tests of the copy helpers, one point of each load.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/final; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
for t in copy_batch_test host_copier_test engine_gpu_tests; do
  $t > $L/$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$t.log | tr '\n' ' ')" >> $L/summary.txt
done
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_service_tests.log | tr '\n' ' ')" >> $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
decode_run decshm --shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 -- --max_queue_delay_us=50
decode_run decshm-nobatch --shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 -- --batching=false
decode_run up --shapes=1x28672x4096 --verify_fraction=0.01 --experts=8:2 --shm=false -- --max_queue_delay_us=50
decode_run decmsg --shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false -- --max_queue_delay_us=50
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf final.tgz final && rm -rf final
