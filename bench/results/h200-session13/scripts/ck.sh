#!/usr/bin/env bash
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/ck; mkdir -p $L
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $L/smi.txt
small_m_test > $L/small_m_test.log 2>&1; echo "small_m_test rc=$?" >> $L/summary.txt
gemm_bench --set decode --layout both --check > /dev/null 2> $L/check.log; echo "check rc=$?" >> $L/summary.txt
for r in 1 2 3; do
  for v in base new; do
    bin=gemm_bench; [ $v = base ] && bin=gemm_bench_base
    echo "## $v round $r" >> $L/decode.log
    $bin --set decode --layout both 2>&1 | grep -E "^decode|empty|geomean" >> $L/decode.log
  done
  echo "## new_streamk_direct round $r" >> $L/decode.log
  gemm_bench --set decode --layout both --shapes .session/sm --direct --stream_k 2>&1 | grep -E "^decode|geomean" >> $L/decode.log
  echo "## new_direct round $r" >> $L/decode.log
  gemm_bench --set decode --layout both --shapes .session/sm --direct 2>&1 | grep -E "^decode|geomean" >> $L/decode.log
done
kernel_gpu_tests > $L/kernel_gpu_tests.log 2>&1; echo "kernel_gpu_tests rc=$?" >> $L/summary.txt
timeout 200 compute-sanitizer --tool memcheck small_m_test --gtest_filter='*ClusterSplitK*:*ForcedGrid*' > $L/memcheck.log 2>&1; echo "memcheck rc=$?" >> $L/summary.txt
timeout 200 compute-sanitizer --tool racecheck small_m_test --gtest_filter='*ClusterSplitKDeterministic*' > $L/racecheck.log 2>&1; echo "racecheck rc=$?" >> $L/summary.txt
cd $OUT && tar czf ck.tgz ck && rm -rf ck
