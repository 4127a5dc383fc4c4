#!/usr/bin/env bash
# H200: the moe set over B [K,N] under forced WGMMA configurations (tile, stages, L2 promotion),
# two rounds, against the heuristics' choice; nk at the default for reference.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/moekn; mkdir -p $L
date -u > $L/start.txt
run() { local name=$1; shift; timeout 60 gemm_bench --set moe "$@" > $L/$name.log 2>&1; echo "$name rc=$?" >> $L/summary.txt; }
for r in 1 2; do
  run default-kn-r$r --layout kn
  run default-nk-r$r --layout nk
  for s in 3 5; do run t64x256-s$s-r$r --layout kn --tile 64x256 --stages $s; done
  for s in 4 6 8; do run t64x128-s$s-r$r --layout kn --tile 64x128 --stages $s; done
  run t128x256-r$r --layout kn --tile 128x256 --cluster 1
  run t128x128-r$r --layout kn --tile 128x128 --cluster 1
  run promo128-r$r --layout kn --debug_flags 32
  run promo0-r$r --layout kn --debug_flags 16
done
date -u > $L/end.txt
cd $OUT && tar czf moekn.tgz moekn && rm -rf moekn
