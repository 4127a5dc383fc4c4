#!/usr/bin/env bash
# H100: the kernel suites after the FP32 float64 verdict was shared by the group and tail-split
# checks (Sm90Grouped.TailSplitMatchesCublasLt had read 1.011e-5 against cuBLASLt for an M=1,
# K=14336 member in final.sh); the grouped and split suites repeated 30 times on fresh data, then
# compute-sanitizer over the kernels (scripts/gpu_sanitize.sh) as far as the time allows.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/kernel-check; mkdir -p $L
date -u > $L/start.txt
timeout 200 kernel_gpu_tests > $L/kernel_gpu_tests.log 2>&1
echo "kernel_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/kernel_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
timeout 200 small_m_test > $L/small_m_test.log 2>&1
echo "small_m_test rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/small_m_test.log | tr '\n' ' ')" >> $L/summary.txt
timeout 200 kernel_gpu_tests --gtest_filter='Sm90Grouped.*:Sm90SplitK.*' --gtest_repeat=30 > $L/repeat.log 2>&1
echo "repeat x30 rc=$? passed=$(grep -c '^\[  PASSED' $L/repeat.log) failed_runs=$(grep -c '^\[  FAILED  \] [0-9]* test' $L/repeat.log) float64_verdicts=$(grep -c 'from cuBLASLt; from float64' $L/repeat.log)" >> $L/summary.txt
cat $L/summary.txt
OUT=$L/sanitize timeout 330 scripts/gpu_sanitize.sh > $L/sanitize.txt 2>&1
date -u > $L/end.txt
cd $OUT && tar czf kernel-check.tgz kernel-check && rm -rf kernel-check
