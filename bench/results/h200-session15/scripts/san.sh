#!/usr/bin/env bash
# H200: the grouped tests three times, then scripts/gpu_sanitize.sh (memcheck, racecheck).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/sanitize; mkdir -p $L
date -u > $L/start.txt
kernel_gpu_tests --gtest_filter='Sm90Grouped*' --gtest_repeat=3 > $L/grouped_repeat.log 2>&1; echo "grouped x3 rc=$? $(grep -cE '^\[  PASSED' $L/grouped_repeat.log) passed blocks" > $L/grouped_summary.txt
OUT=$L timeout 560 scripts/gpu_sanitize.sh > $L/run.log 2>&1
date -u > $L/end.txt
cd $OUT && tar czf sanitize.tgz sanitize && rm -rf sanitize
