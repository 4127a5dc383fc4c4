#!/usr/bin/env bash
# H200: idle dispatch (e0b7b73, gemm_server) against the server before it (e746b82,
# gemm_server_old): the GPU suites with the new tests, then decode over --shm at 64 callers
# (50 us delay and the default 200 us) and at 1 and 8 callers (default delay), two rounds in
# alternating order.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
mkdir -p $PWD/.old-bin && ln -sf $B/gemm_server_old $PWD/.old-bin/gemm_server
OPATH=$PWD/.old-bin:$PATH
L=$OUT/idle-ab; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
suite() {  # suite NAME [env...]: one gtest binary, one summary line
  local t=$1; shift
  env "$@" timeout 300 $t > $L/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$t.log | tr '\n' ' ')" >> $L/summary.txt
}
suite batcher_test
suite unit_plan_test
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat $L/summary.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
point() {  # point NAME LOADGEN... -- SERVER...: old then new, or new then old in round 2
  local name=$1; shift
  if [ "$R" = 1 ]; then
    PATH=$OPATH decode_run $name-old-r$R "$@"; decode_run $name-new-r$R "$@"
  else
    decode_run $name-new-r$R "$@"; PATH=$OPATH decode_run $name-old-r$R "$@"
  fi
}
for R in 1 2; do
  point c64d50 $DS -- --max_queue_delay_us=50
  point c64 $DS --
  point c8 $DS --concurrency=8 --
  point c1 $DS --concurrency=1 --
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cat $L/decode_summary.txt
cd $L/.. && tar czf idle-ab.tgz idle-ab && rm -rf idle-ab
