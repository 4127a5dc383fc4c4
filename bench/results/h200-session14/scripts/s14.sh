#!/usr/bin/env bash
# Fourteenth session: pair split (K pairs through DSMEM) correctness and A/B (kDebugNoPair).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/$gpu; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv > $L/smi.txt
date -u > $L/start.txt
kernel_gpu_tests --gtest_filter='Sm90PairSplit*:Sm90SplitK*' > $L/pair_tests.log 2>&1; echo "pair tests rc=$?" >> $L/summary.txt
tail -3 $L/pair_tests.log >> $L/summary.txt
gemm_bench --set decode --layout both --check > $L/decode_check.log 2>&1; echo "decode check rc=$?" >> $L/summary.txt
for r in 1 2 3; do
  gemm_bench --set decode --layout both --debug_flags 256 > $L/decode_nopair_$r.log 2>&1
  gemm_bench --set decode --layout both > $L/decode_pair_$r.log 2>&1
done
[ "${SUITES:-1}" = 1 ] && { kernel_gpu_tests > $L/kernel_gpu_tests.log 2>&1; echo "kernel_gpu_tests rc=$?" >> $L/summary.txt; tail -3 $L/kernel_gpu_tests.log >> $L/summary.txt; }
date -u > $L/end.txt
cd $OUT && tar czf $gpu.tgz $gpu && rm -rf $gpu
