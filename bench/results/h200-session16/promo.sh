#!/usr/bin/env bash
# H200: L2 promotion of the tensor maps (default 256 B, --debug_flags 16 none, 32 128 B) over
# every set: decode, batched, moe (two rounds), large and grouped (one).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/promo; mkdir -p $L
date -u > $L/start.txt
run() { local name=$1; shift; timeout 120 gemm_bench "$@" > $L/$name.log 2>&1; echo "$name rc=$?" >> $L/summary.txt; }
for r in 1 2; do
  for f in 0 16 32; do
    run decode-f$f-r$r --set decode --layout both --debug_flags $f
    run batched-f$f-r$r --set batched --layout both --debug_flags $f
    run moenk-f$f-r$r --set moe --layout nk --debug_flags $f
  done
done
for f in 0 16 32; do run large-f$f --set large --layout both --debug_flags $f; done
for f in 0 16; do run grouped-f$f --set grouped --layout both --debug_flags $f; done
date -u > $L/end.txt
for f in $L/*.log; do echo "$(basename $f .log): $(grep -E 'geomean ratio' $f | sed 's/.*geomean ratio/gm/' | cut -c1-40 | tr '\n' ' ')"; done > $L/geomeans.txt
cd $OUT && tar czf promo.tgz promo && rm -rf promo
