#!/usr/bin/env bash
# Session 20, two GPUs of one host: the engine suites (the multi-GPU engine test runs only here),
# then the compute-bound load of the two-GPU bar on the final server code: resident
# 28672x28672 replicated on both GPUs, M=2048, A and D in shared memory, 16 callers, one GPU
# against two (scripts/gpu_multi_gpu_bench.sh), twice.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/two-gpus; mkdir -p $L
date -u > $L/start.txt
suite() {  # suite NAME [env...]
  local t=$1; shift
  env "$@" timeout 240 $t > $L/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$t.log | tr '\n' ' ')" >> $L/summary.txt
}
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
grep -E "MultiGpu" $L/engine_gpu_tests.log | head -3 >> $L/summary.txt
cat $L/summary.txt
for r in 1 2; do
  OUT=$L/r$r EXTRA=--shm LOADS=compute COMPUTE_CONCURRENCY=16 bash scripts/gpu_multi_gpu_bench.sh > /dev/null 2>&1
  echo "== round $r"; grep -E "^==|^concurrency=16|verify" $L/r$r/summary.txt
done
date -u > $L/end.txt
cd $L/.. && tar czf two-gpus.tgz two-gpus && rm -rf two-gpus
