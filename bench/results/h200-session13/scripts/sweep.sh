#!/usr/bin/env bash
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/sweep; mkdir -p $L
for r in 1 2; do
  echo "## pick round $r" >> $L/sweep.log
  gemm_bench --set decode --layout nk --shapes .session/m3 --sm90_main 2>&1 | grep -E "^decode" >> $L/sweep.log
  for tile in 64x128 64x256 128x128 128x256; do
    for cl in 1 2; do
      for ns in "" "--no_split"; do
        echo "## tile $tile cluster $cl $ns round $r" >> $L/sweep.log
        gemm_bench --set decode --layout nk --shapes .session/m3 --sm90_main --tile $tile --cluster $cl $ns 2>&1 | grep -E "^decode|rror" >> $L/sweep.log
      done
    done
  done
done
cd $OUT && tar czf sweep.tgz sweep && rm -rf sweep
