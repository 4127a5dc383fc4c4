#!/usr/bin/env bash
# Pair split vs workspace split at equal stages.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/stg; mkdir -p $L
date -u > $L/start.txt
for r in 1 2 3; do
  gemm_bench --set decode --layout both --shapes .session/shapes-s64 > $L/s64_pair_$r.log 2>&1
  gemm_bench --set decode --layout both --shapes .session/shapes-s64 --debug_flags 256 > $L/s64_nopair_$r.log 2>&1
  gemm_bench --set decode --layout both --shapes .session/shapes-s64 --debug_flags 256 --stages 7 > $L/s64_nopair7_$r.log 2>&1
  gemm_bench --set decode --layout both --shapes .session/shapes-s128 > $L/s128_pair_$r.log 2>&1
  gemm_bench --set decode --layout both --shapes .session/shapes-s128 --debug_flags 256 > $L/s128_nopair_$r.log 2>&1
  gemm_bench --set decode --layout both --shapes .session/shapes-s128 --debug_flags 256 --stages 5 > $L/s128_nopair5_$r.log 2>&1
done
date -u > $L/end.txt
cd $OUT && tar czf stg.tgz stg && rm -rf stg
