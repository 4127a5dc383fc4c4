#!/usr/bin/env bash
# H200: forced WGMMA tile / stages / cluster on the batched set's memory-bound row (256 x 256^3,
# ours at ~75% of the copy rate) and the compute-bound one (32 x 1024^3), both layouts, against
# the heuristics' choice, each in its own gemm_bench process.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/batched-sweep; mkdir -p $L/shapes
printf '# M N K batch\n256 256 256 256\n' > $L/shapes/batched.txt
date -u > $L/start.txt
run() {  # run NAME FLAGS...
  local n=$1; shift
  timeout 60 gemm_bench --set batched --shapes $L/shapes --layout both --check --json "$@" > $L/$n.log 2>&1
  echo "$n: $(grep -E '^batched ' $L/$n.log | awk '{printf "%s %s %s/%s ", $6, $7, $8, $11}') $(grep -c 'FAIL\|nan' $L/$n.log)" >> $L/summary.txt
}
run default
for t in 128x256 128x128 64x256 64x128 256x128; do
  for s in 2 3 4 6; do
    for c in 1 2; do run t$t-s$s-c$c --tile $t --stages $s --cluster $c; done
  done
done
run default-again
date -u > $L/end.txt
cd $OUT && tar czf batched-sweep.tgz batched-sweep && rm -rf batched-sweep
