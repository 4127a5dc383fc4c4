#!/usr/bin/env bash
# Stage sweep of the WGMMA decode rows, pair split vs workspace split.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/sweep; mkdir -p $L
date -u > $L/start.txt
for r in 1 2 3; do
  for st in 3 4 5 6 7 8; do
    gemm_bench --set decode --layout both --shapes .session/shapes-s64 --stages $st > $L/s64_pair${st}_$r.log 2>&1
    gemm_bench --set decode --layout both --shapes .session/shapes-s64 --debug_flags 256 --stages $st > $L/s64_nopair${st}_$r.log 2>&1
  done
  for st in 2 3 4 5 6; do
    gemm_bench --set decode --layout both --shapes .session/shapes-s128 --stages $st > $L/s128_pair${st}_$r.log 2>&1
    gemm_bench --set decode --layout both --shapes .session/shapes-s128 --debug_flags 256 --stages $st > $L/s128_nopair${st}_$r.log 2>&1
  done
  for st in 2 3 4; do
    gemm_bench --set decode --layout both --shapes .session/shapes-s28 --stages $st > $L/s28_x${st}_$r.log 2>&1
  done
  gemm_bench --set decode --layout both --shapes .session/shapes-s28 > $L/s28_def_$r.log 2>&1
done
date -u > $L/end.txt
cd $OUT && tar czf sweep.tgz sweep && rm -rf sweep
