#!/usr/bin/env bash
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/pdl; mkdir -p $L
S=.session/sm
for v in early late; do gemm_bench_$v --set decode --layout both --shapes $S --check 2>&1 | grep -E "^decode|geomean" > $L/check_$v.log; done
for round in 1 2 3; do
 for v in base early late; do
  echo "## $v round $round" >> $L/all.log
  gemm_bench_$v --set decode --layout both --shapes $S 2>&1 | grep -E "^decode|empty|geomean" >> $L/all.log
 done
 echo "## base_nofix round $round" >> $L/all.log
 gemm_bench_base --set decode --layout both --shapes $S --direct --debug_flags 16 2>&1 | grep -E "^decode|geomean" >> $L/all.log
done
cd $OUT && tar czf pdl.tgz pdl && rm -rf pdl
