#!/usr/bin/env bash
# Thirteenth-session validation: suites, A/B against main, run_bench, optional sanitizers.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/$gpu; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > $L/smi.txt
date -u > $L/start.txt
[ "${SUITES:-1}" = 1 ] && for t in kernel_gpu_tests small_m_test; do $t > $L/$t.log 2>&1; echo "$t rc=$?" >> $L/summary.txt; done
[ "${SUITES:-1}" = 1 ] && GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$?" >> $L/summary.txt
[ "${SUITES:-1}" = 1 ] && GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$?" >> $L/summary.txt
for r in 1 2 3; do
  for v in main new; do
    bin=gemm_bench; [ $v = main ] && bin=gemm_bench_main
    $bin --set decode --layout both > $L/decode_${v}_$r.log 2>&1
  done
done
for r in 1 2; do
  for v in main new; do
    bin=gemm_bench; [ $v = main ] && bin=gemm_bench_main
    $bin --set batched --layout both > $L/batched_${v}_$r.log 2>&1
  done
done
[ "${RUNBENCH:-1}" = 1 ] && mkdir -p $L/run_bench && OUT=$L/run_bench bench/run_bench.sh $B/gemm_bench > $L/run_bench.log 2>&1; echo "run_bench rc=$?" >> $L/summary.txt
if [ "${SANITIZE:-0}" = 1 ]; then OUT=$L/sanitize timeout 420 scripts/gpu_sanitize.sh > /dev/null 2>&1; echo "sanitize rc=$?" >> $L/summary.txt; fi
date -u > $L/end.txt
cd $OUT && tar czf $gpu.tgz $gpu && rm -rf $gpu
