#!/usr/bin/env bash
# Final kernels (promotion by DRAM peak): kernel GPU tests, then decode / batched / moe at the
# device default vs forced 256 B (32) and 128 B (512), one process each.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/final-$gpu; mkdir -p $L
date -u > $L/start.txt
for s in moe decode batched; do
  for f in 0 32 512; do timeout 60 gemm_bench --set $s --layout both --check --debug_flags $f > $L/$s-f$f.log 2>&1; done
done
timeout 120 kernel_gpu_tests > $L/kernel_gpu_tests.log 2>&1; echo "kernel_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/kernel_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
date -u > $L/end.txt
for f in $L/*-f*.log; do echo "$(basename $f .log): $(grep -E 'geomean ratio' $f | cut -c1-50 | tr '\n' ' ') bad=$(grep -c 'FAIL\|nan' $f)"; done > $L/geomeans.txt
cd $OUT && tar czf final-$gpu.tgz final-$gpu && rm -rf final-$gpu
