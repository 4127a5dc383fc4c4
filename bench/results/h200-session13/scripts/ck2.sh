#!/usr/bin/env bash
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/ck2; mkdir -p $L
cuobjdump -sass .session/sm_new.o > $L/sass.txt 2>&1
small_m_test > $L/small_m_test.log 2>&1; echo "small_m_test rc=$?" >> $L/summary.txt
for r in 1 2 3; do
  for v in base new; do
    bin=gemm_bench; [ $v = base ] && bin=gemm_bench_base
    echo "## $v round $r" >> $L/decode.log
    $bin --set decode --layout both --shapes .session/sm 2>&1 | grep -E "^decode|empty|geomean" >> $L/decode.log
  done
  echo "## new_streamk_direct round $r" >> $L/decode.log
  gemm_bench --set decode --layout both --shapes .session/sm --direct --stream_k 2>&1 | grep -E "^decode|geomean" >> $L/decode.log
done
cd $OUT && tar czf ck2.tgz ck2 && rm -rf ck2
