#!/usr/bin/env bash
# Grouped tail split-K: GPU tests, small MoE groups with/without split and stage choices.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/moe2-$gpu; mkdir -p $L
date -u > $L/start.txt
kernel_gpu_tests > $L/kernel_gpu_tests.log 2>&1; echo "kernel_gpu_tests rc=$?" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$?" >> $L/summary.txt
gemm_bench --set moe --shapes .session/smoe --layout both --check --json > $L/smoe_check.jsonl 2> $L/smoe_check.log; echo "smoe check rc=$?" >> $L/summary.txt
gemm_bench --set moe --layout both --check --json > $L/moe_check.jsonl 2> $L/moe_check.log; echo "moe check rc=$?" >> $L/summary.txt
for r in 1 2; do
  gemm_bench --set moe --shapes .session/smoe --layout both > $L/smoe_new_$r.log 2>&1
  gemm_bench --set moe --shapes .session/smoe --layout both --no_split > $L/smoe_nosplit_$r.log 2>&1
  for s in 4 5 6 7; do gemm_bench --set moe --shapes .session/smoe --layout both --stages $s > $L/smoe_s${s}_$r.log 2>&1; done
  gemm_bench --set moe --shapes .session/smoe --layout both --tile 64x128 > $L/smoe_64x128_$r.log 2>&1
  gemm_bench --set moe --shapes .session/smoe --layout both --tile 64x128 --stages 6 > $L/smoe_64x128s6_$r.log 2>&1
  gemm_bench --set decode --shapes .session/smoe --layout both > $L/sdec_$r.log 2>&1
done
gemm_bench --set grouped --layout both --check > $L/grouped_check.log 2>&1; echo "grouped check rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf moe2-$gpu.tgz moe2-$gpu && rm -rf moe2-$gpu
