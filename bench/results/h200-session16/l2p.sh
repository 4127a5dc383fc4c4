#!/usr/bin/env bash
# H200, 128 B L2 promotion as the default: GPU suites, A/B against the old 256 B (--debug_flags 32)
# in one process per set, alternating, two rounds; then bench/run_bench.sh (every set --check'ed).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/l2p; mkdir -p $L
date -u > $L/start.txt
kernel_gpu_tests > $L/kernel_gpu_tests.log 2>&1; echo "kernel_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/kernel_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
for r in 1 2; do
  for s in decode batched moe; do
    timeout 120 gemm_bench --set $s --layout both > $L/$s-new-r$r.log 2>&1
    timeout 120 gemm_bench --set $s --layout both --debug_flags 32 > $L/$s-old-r$r.log 2>&1
  done
done
OUT=$L/run_bench timeout 400 bench/run_bench.sh $B/gemm_bench > $L/run_bench.log 2>&1; echo "run_bench rc=$?" >> $L/summary.txt
date -u > $L/end.txt
for f in $L/*-r?.log; do echo "$(basename $f .log): $(grep -E 'geomean ratio' $f | cut -c1-50 | tr '\n' ' ')"; done > $L/geomeans.txt
cd $OUT && tar czf l2p.tgz l2p && rm -rf l2p
