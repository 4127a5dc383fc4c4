#!/usr/bin/env bash
# H100: L2 promotion 128 B (build default) / 256 B (--debug_flags 32) / none (16), alternating,
# two rounds, decode, batched and moe sets.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/promo-h100; mkdir -p $L
date -u > $L/start.txt
for r in 1 2; do
  for s in decode batched moe; do
    for f in 0 32 16; do timeout 90 gemm_bench --set $s --layout both --debug_flags $f > $L/$s-f$f-r$r.log 2>&1; done
  done
done
date -u > $L/end.txt
for f in $L/*-r?.log; do echo "$(basename $f .log): $(grep -E 'geomean ratio' $f | cut -c1-50 | tr '\n' ' ')"; done > $L/geomeans.txt
cd $OUT && tar czf promo-h100.tgz promo-h100 && rm -rf promo-h100
