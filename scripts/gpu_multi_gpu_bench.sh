#!/usr/bin/env bash
# One-GPU vs two-GPU service throughput (issue #4), run ON THE GPU MACHINE (kind nvidia-h200-x2)
# from a device bundle with gemm_server, gemm_client and gemm_loadgen on PATH:
#   ../shared/tools/device-bundle.sh .device-bundle-svc build/server/gemm_server \
#       build/client/gemm_client build/client/loadgen/gemm_loadgen
#   source .device-bundle-svc/env.sh && scripts/gpu_multi_gpu_bench.sh
# For each load, the same server binary runs once with CUDA_VISIBLE_DEVICES=0 and once with both
# GPUs; resident matrices are replicated on every GPU (--replicate_resident). Writes loadgen JSON
# reports, server logs and a summary (summary.txt) under $OUT (default /tmp/gemm-multi-gpu).
set -uo pipefail
# EXTRA: more loadgen flags for every load, e.g. EXTRA=--shm (operands and outputs through a
# registered shared-memory region instead of the gRPC messages). SERVER_FLAGS: more server flags.
# GPU_SETS: the CUDA_VISIBLE_DEVICES values to run each load with (default "0 0,1").
OUT=${OUT:-/tmp/gemm-multi-gpu}
mkdir -p "$OUT"
WINDOW=${WINDOW:-2}
port=50251

start_server() {  # start_server NAME DEVICES FLAGS...
  local name=$1 devices=$2
  shift 2
  port=$((port + 1))
  CUDA_VISIBLE_DEVICES=$devices gemm_server --backend=cuda --host=127.0.0.1 --port=$port \
    --metrics_port=0 --replicate_resident ${SERVER_FLAGS:-} "$@" >"$OUT/server-$name.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do
    gemm_client --target=127.0.0.1:$port info >"$OUT/info-$name.json" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "server $name did not start"
  cat "$OUT/server-$name.log"
  return 1
}

stop_server() { kill -TERM $server_pid; wait $server_pid; }

loadgen() {  # loadgen NAME FLAGS...
  local name=$1
  shift
  gemm_loadgen --target=127.0.0.1:$port --warmup_s=1 --window_s=$WINDOW --max_windows=4 \
    --progress=off --json="$OUT/$name.json" ${EXTRA:-} "$@" >"$OUT/$name.txt" 2>&1
  echo "== $name" >>"$OUT/summary.txt"
  tail -n 16 "$OUT/$name.txt" >>"$OUT/summary.txt"
}

run_load() {  # run_load LOAD FLAGS... (loadgen flags), once per GPU count
  local load=$1
  shift
  for devices in ${GPU_SETS:-0 0,1}; do
    local tag=$load-gpus$(( ${#devices} / 2 + 1 ))
    start_server "$tag" "$devices" && {
      loadgen "$tag" "$@"
      stop_server
    }
  done
}

# LOADS: which loads to run, space-separated (default "resident inline decode"); "compute" adds
# the compute-bound load (needs EXTRA=--shm: over gRPC messages it is transport-bound).
LOADS=${LOADS:-resident inline decode}
has_load() { [[ " $LOADS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=index,name,memory.total,clocks.sm --format=csv | tee "$OUT/gpu.txt"
: >"$OUT/summary.txt"
# Resident B 8192x8192, M=2048 rows per request (275 GFLOP, 32 MiB in + 32 MiB out).
has_load resident && run_load resident-m2048 --shapes=2048x8192x8192 --b=resident --b_layout=nk \
  --concurrency=32 --channels=4 --verify_fraction=0.01
# Large inline requests (A and B in the request).
has_load inline && run_load inline-4096 --shapes=4096x4096x4096 --b=inline --concurrency=16 \
  --channels=4
# Decode: resident B, M=16.
has_load decode && run_load decode-m16 --shapes=16x8192x8192 --b=resident --b_layout=nk \
  --concurrency=64 --channels=8
# Compute-bound: resident B 28672x28672 (1.6 GB), M=2048: 3.4 TFLOP per request against 112 MiB
# in and 112 MiB out, ~14k FLOP per transported byte (~4.8 ms of GPU time vs ~2.3 ms of PCIe
# each way at 50 GB/s).
has_load compute && run_load compute-m2048 --shapes=2048x28672x28672 --b=resident --b_layout=nk \
  --concurrency=${COMPUTE_CONCURRENCY:-16,32} --channels=4 --verify_fraction=0.01
echo "gpu_multi_gpu_bench: done"
