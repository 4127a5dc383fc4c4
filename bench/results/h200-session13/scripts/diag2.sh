#!/usr/bin/env bash
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/diag2; mkdir -p $L
for r in 1 2 3; do
  for f in 0 64 1 65; do
    echo "## flags $f round $r" >> $L/all.log
    gemm_bench --set decode --layout both --shapes .session/m3 --sm90_main --debug_flags $f 2>&1 | grep -E "^decode" >> $L/all.log
  done
done
cd $OUT && tar czf diag2.tgz diag2 && rm -rf diag2
