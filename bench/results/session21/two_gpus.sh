#!/usr/bin/env bash
# Session 21, nvidia-h100-x2: the two-GPU bar on the final code (packed answers, SubmitAll, CUDA
# IPC code in the server): the service suite (the expert step across both GPUs, the CUDA IPC test)
# and one round of scripts/gpu_multi_gpu_bench.sh's compute-bound load (resident 28672^2
# replicated, M=2048, 16 callers, --shm), one GPU against two.
NAME=two-gpus
source scripts/lib/device_call.sh
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
cat $L/summary.txt
OUT=$L/r1 EXTRA=--shm LOADS=compute COMPUTE_CONCURRENCY=16 bash scripts/gpu_multi_gpu_bench.sh >/dev/null 2>&1
grep -E "^==|^concurrency=16|verify" $L/r1/summary.txt
date -u >$L/end.txt
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
