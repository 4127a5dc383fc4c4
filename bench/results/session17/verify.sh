#!/usr/bin/env bash
# Seventeenth session, first GPU call on each kind: the GPU suites and the memory-bound sets on
# the code as landed (b87c418), plus the L2-promotion A/B (default vs forced 256 B / 128 B).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/verify-$gpu; mkdir -p $L
date -u > $L/start.txt
suite() {  # suite NAME [env...]: one gtest binary, one summary line
  local t=$1; shift
  env "$@" timeout 240 $t > $L/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$t.log | tr '\n' ' ')" >> $L/summary.txt
}
suite kernel_gpu_tests
suite small_m_test
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
for s in decode batched moe; do
  for f in 0 32 512; do timeout 60 gemm_bench --set $s --layout both --check --debug_flags $f > $L/$s-f$f.log 2>&1; done
done
for f in $L/*-f*.log; do echo "$(basename $f .log): $(grep -E 'geomean ratio' $f | cut -c1-50 | tr '\n' ' ') bad=$(grep -c 'FAIL\|nan' $f)"; done > $L/geomeans.txt
date -u > $L/end.txt
cd $OUT && tar czf verify-$gpu.tgz verify-$gpu && rm -rf verify-$gpu
