#!/usr/bin/env bash
# Final build: suites, small-M SASS (LDL/STL per kernel, both architectures), one decode A/B round.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/fin; mkdir -p $L
date -u > $L/start.txt
xz -dc .session/objs2/small_m_launch.cu.o.xz > /tmp/sm.o
cuobjdump -sass /tmp/sm.o > /tmp/sm.sass 2>&1
echo "small_m_launch.cu.o: LDL $(grep -cE '\bLDL\b' /tmp/sm.sass) STL $(grep -cE '\bSTL\b' /tmp/sm.sass) HMMA $(grep -c HMMA /tmp/sm.sass) functions $(grep -c 'Function :' /tmp/sm.sass)" > $L/sass_small_m.txt
for t in kernel_gpu_tests small_m_test; do $t > $L/$t.log 2>&1; echo "$t rc=$?" >> $L/summary.txt; done
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$?" >> $L/summary.txt
gemm_bench --set decode --layout both --check > $L/decode_check.log 2>&1; echo "decode check rc=$?" >> $L/summary.txt
for r in 1 2; do
  echo "## direct (plan) round $r" >> $L/tile_aligned.log
  gemm_bench --set decode --layout both --shapes .session/ta --direct 2>&1 | grep -E "^decode|geomean" >> $L/tile_aligned.log
  echo "## direct --stream_k round $r" >> $L/tile_aligned.log
  gemm_bench --set decode --layout both --shapes .session/ta --direct --stream_k 2>&1 | grep -E "^decode|geomean" >> $L/tile_aligned.log
done
date -u > $L/end.txt
cd $OUT && tar czf fin.tgz fin && rm -rf fin
