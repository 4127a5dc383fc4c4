#!/usr/bin/env bash
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/nkrule; mkdir -p $L
small_m_test > $L/small_m_test.log 2>&1; echo "small_m_test rc=$?" >> $L/summary.txt
gemm_bench --set decode --layout both --check > $L/check.log 2>&1; echo "check rc=$?" >> $L/summary.txt
for r in 1 2 3; do
  for v in main new; do
    bin=gemm_bench; [ $v = main ] && bin=gemm_bench_main
    echo "## $v round $r" >> $L/ab.log
    $bin --set decode --layout nk 2>&1 | grep -E "^decode|geomean" >> $L/ab.log
  done
done
cd $OUT && tar czf nkrule.tgz nkrule && rm -rf nkrule
