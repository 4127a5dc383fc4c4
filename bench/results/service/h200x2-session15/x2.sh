#!/usr/bin/env bash
# Two H200s: the multi-GPU engine test; one- vs two-GPU compute load at the new default bound.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/x2; mkdir -p $L
date -u > $L/start.txt
engine_gpu_tests --gtest_filter='*MultiGpu*' > $L/engine_multigpu.log 2>&1; echo "multi-GPU engine test rc=$?" >> $L/summary.txt
mkdir -p $L/multi && OUT=$L/multi EXTRA=--shm LOADS=compute COMPUTE_CONCURRENCY=16 timeout 300 scripts/gpu_multi_gpu_bench.sh > $L/multi.log 2>&1; echo "multi rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cat $L/summary.txt $L/multi/summary.txt 2>/dev/null
cd $OUT && tar czf x2.tgz x2 && rm -rf x2
