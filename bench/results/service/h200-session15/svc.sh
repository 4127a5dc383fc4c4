#!/usr/bin/env bash
# Service: MoE decode steps batched across requests (on/off), the decode load, expert engine tests.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/svc; mkdir -p $L
date -u > $L/start.txt
engine_gpu_tests --gtest_filter='*Expert*' > $L/expert_tests.log 2>&1; echo "expert tests rc=$?" >> $L/summary.txt
OUT=$L/moe LOADS=moe WINDOW=2 scripts/gpu_service_bench.sh > $L/moe.log 2>&1; echo "moe rc=$?" >> $L/summary.txt
OUT=$L/decode LOADS=decode WINDOW=2 EXTRA=--shm scripts/gpu_service_bench.sh > $L/decode.log 2>&1; echo "decode rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf svc.tgz svc && rm -rf svc
