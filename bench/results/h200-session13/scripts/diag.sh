#!/usr/bin/env bash
# Split-K exchange / fixup diagnostic (exp/split-diag build).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/diag; mkdir -p $L
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv > $L/smi.txt
run() { local tag=$1; shift; echo "## $tag: $*" >> $L/all.log; gemm_bench --set decode --layout both "$@" 2>&1 | grep -E "^decode|empty|geomean" >> $L/all.log; }
for round in 1 2; do
 for S in .session/s8k .session/k28; do
  run base --shapes $S
  run main --shapes $S --sm90_main
  run main_skipred --shapes $S --sm90_main --debug_flags 16
  run main_skipepi --shapes $S --sm90_main --debug_flags 1
  run main_skipboth --shapes $S --sm90_main --debug_flags 17
  run main_nosplit --shapes $S --sm90_main --no_split
 done
 S=.session/s8k
 run direct --shapes $S --direct
 run direct_nofix --shapes $S --direct --debug_flags 16
 run direct_c128 --shapes $S --direct --ctas 128
 run direct_c128_nofix --shapes $S --direct --ctas 128 --debug_flags 16
 run direct_c64 --shapes $S --direct --ctas 64
done
cd $OUT && tar czf diag.tgz diag && rm -rf diag
