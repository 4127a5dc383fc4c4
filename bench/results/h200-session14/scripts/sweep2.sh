#!/usr/bin/env bash
# Stage sweep of single-wave WGMMA launches (main's behaviour: --debug_flags 256).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/sweep2; mkdir -p $L
date -u > $L/start.txt
run() { gemm_bench --set decode --layout both --shapes .session/sw-$1 --debug_flags 256 ${3:+--stages $3} > $L/$1_$2_$r.log 2>&1; }
for r in 1 2 3; do
  run A def; for st in 3 4 5 6 7 8; do run A s$st $st; done
  run B def; for st in 2 3 4; do run B s$st $st; done
  run C def; for st in 3 4 5 6; do run C s$st $st; done
  run D def; for st in 2 3 4; do run D s$st $st; done
done
date -u > $L/end.txt
cd $OUT && tar czf sweep2.tgz sweep2 && rm -rf sweep2
