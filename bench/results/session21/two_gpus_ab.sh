#!/usr/bin/env bash
# Session 21, nvidia-h100-x2 (the machine of two_gpus.sh, still warm): the two-GPU point of the
# compute-bound load with main's server before this session (gemm_server_base, 48c056b) and the
# final one, in that order, to tell a regression from the host (two_gpus.sh read 1.80x where the
# twentieth session read 1.97-1.99x, with slower copies).
NAME=two-gpus-ab
source scripts/lib/device_call.sh
for s in gemm_server_base gemm_server; do
  mkdir -p $L/$s
  ln -sf $B/$s $L/$s/gemm_server
  PATH=$L/$s:$PATH OUT=$L/$s EXTRA=--shm LOADS=compute COMPUTE_CONCURRENCY=16 GPU_SETS=0,1 \
    bash -c 'source scripts/gpu_multi_gpu_bench.sh' >/dev/null 2>&1 &
  wait
  echo "== $s"; grep -A3 "gpus2" $L/$s/summary.txt | grep "^concurrency" | head -2
done
date -u >$L/end.txt
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
