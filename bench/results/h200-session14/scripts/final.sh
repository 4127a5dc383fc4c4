#!/usr/bin/env bash
# Fourteenth session, final build: GPU suites, decode/batched A/B vs the session start (5646491),
# bench/run_bench.sh (every row --check'ed).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/final-$gpu; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > $L/smi.txt
date -u > $L/start.txt
for t in kernel_gpu_tests small_m_test; do $t > $L/$t.log 2>&1; echo "$t rc=$?" >> $L/summary.txt; done
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$?" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$?" >> $L/summary.txt
for r in 1 2 3; do
  for v in main new; do
    bin=gemm_bench; [ $v = main ] && bin=gemm_bench_main
    $bin --set decode --layout both > $L/decode_${v}_$r.log 2>&1
    $bin --set batched --layout both > $L/batched_${v}_$r.log 2>&1
    $bin --set decode --layout both --shapes .session/sw-M > $L/M_${v}_$r.log 2>&1
  done
done
mkdir -p $L/run_bench && OUT=$L/run_bench bench/run_bench.sh $B/gemm_bench > $L/run_bench.log 2>&1; echo "run_bench rc=$?" >> $L/summary.txt
if [ "${SANITIZE:-0}" = 1 ]; then OUT=$L/sanitize timeout 400 scripts/gpu_sanitize.sh > /dev/null 2>&1; echo "sanitize rc=$?" >> $L/summary.txt; fi
date -u > $L/end.txt
cd $OUT && tar czf final-$gpu.tgz final-$gpu && rm -rf final-$gpu
