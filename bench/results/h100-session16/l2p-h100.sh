#!/usr/bin/env bash
# H100, 128 B L2 promotion as the default: kernel GPU tests, then one round of A/B against the
# old 256 B (--debug_flags 32) per set (decode, batched, moe), in one process per run.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/l2p-h100; mkdir -p $L
date -u > $L/start.txt
nvidia-smi --query-gpu=name --format=csv,noheader > $L/gpu.txt
for s in decode batched moe; do
  timeout 90 gemm_bench --set $s --layout both > $L/$s-new.log 2>&1
  timeout 90 gemm_bench --set $s --layout both --debug_flags 32 > $L/$s-old.log 2>&1
done
timeout 150 kernel_gpu_tests > $L/kernel_gpu_tests.log 2>&1; echo "kernel_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/kernel_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
date -u > $L/end.txt
for f in $L/*-new.log $L/*-old.log; do echo "$(basename $f .log): $(grep -E 'geomean ratio' $f | cut -c1-50 | tr '\n' ' ')"; done > $L/geomeans.txt
cd $OUT && tar czf l2p-h100.tgz l2p-h100 && rm -rf l2p-h100
