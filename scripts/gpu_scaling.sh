#!/usr/bin/env bash
# One GPU against several, on a machine with two or more: each load runs against the same server
# binary once with CUDA_VISIBLE_DEVICES=0 and once with GPUS (default: every GPU), resident
# matrices replicated on every GPU (--replicate_resident). LOADS (default "compute"):
#   compute  2048x28672x28672 against a resident weight (1.6 GB; 3.4 TFLOP a request), A and D in
#            a POSIX shared-memory region, 8 callers per GPU on 4 channels, 1% of answers
#            checked: a load the GPUs bound rather than the host
#   resident 2048x8192x8192 against a resident weight, A and D in the gRPC messages, 32 callers
#   inline   4096x4096x4096 with A and B in every request, 16 callers
#   decode   16x8192x8192 against a resident weight, A and D in the gRPC messages, 64 callers
# Records gpus-<count>-<load> in $RESULTS_DIR/<gpu>-service.json; reports, server logs and
# summary.txt under $OUT. SERVER_FLAGS: more server flags for every run.
set -uo pipefail
here=$(dirname "$0")
# shellcheck source=lib/gpu_env.sh
source "$here/lib/gpu_env.sh"
GPUS=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)}
ngpus=$(echo "$GPUS" | tr ',' '\n' | wc -l)
callers=$((8 * ngpus))
port=50250
nvidia-smi --query-gpu=index,name,memory.total,clocks.sm --format=csv | tee "$OUT/gpu.txt"
: >"$OUT/summary.txt"

run_point() {  # run_point NAME DEVICES LOADGEN_FLAGS...
  local name=$1 devices=$2 pid
  shift 2
  port=$((port + 1))
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$devices gemm_server --backend=cuda --host=127.0.0.1 --port=$port \
    --metrics_port=0 --replicate_resident ${SERVER_FLAGS:-} >"$OUT/server-$name.log" 2>&1 &
  pid=$!
  wait_for_server $port
  timeout 300 gemm_loadgen --target=127.0.0.1:$port --warmup_s=1 --window_s=2 --max_windows=4 \
    --progress=off --json="$OUT/$name.json" "$@" >"$OUT/$name.txt" 2>&1
  kill -TERM $pid
  wait $pid
  { echo "== $name"; tail -n 16 "$OUT/$name.txt"; } >>"$OUT/summary.txt"
}

run_load() {  # run_load LOAD WHAT LOADGEN_FLAGS...
  local load=$1 what=$2
  shift 2
  run_point "$load-gpus1" 0 "$@"
  run_point "$load-gpus$ngpus" "$GPUS" "$@"
  python3 "$here/lib/service_results.py" "$RESULTS_DIR" --load "gpus-$ngpus-$load" --what "$what" \
    --command "LOADS=$load scripts/gpu_scaling.sh" \
    "--point=gpus-1:$OUT/$load-gpus1.json:--replicate_resident (CUDA_VISIBLE_DEVICES=0)" \
    "--point=gpus-$ngpus:$OUT/$load-gpus$ngpus.json:--replicate_resident (CUDA_VISIBLE_DEVICES=$GPUS)"
}

for load in ${LOADS:-compute}; do
  case $load in
    compute)
      run_load compute "2048x28672x28672 against a resident weight replicated on every GPU (3.4 TFLOP a request), A and D in a POSIX shared-memory region, $callers closed-loop callers on 4 channels; 1% of answers checked" \
        --shapes=2048x28672x28672 --b=resident --b_layout=nk --shm --concurrency=$callers --channels=4 \
        --verify_fraction=0.01 ;;
    resident)
      run_load resident "2048x8192x8192 against a resident weight replicated on every GPU, A and D in the gRPC messages (32 MiB each way), 32 closed-loop callers on 4 channels; 1% of answers checked" \
        --shapes=2048x8192x8192 --b=resident --b_layout=nk --concurrency=32 --channels=4 \
        --verify_fraction=0.01 ;;
    inline)
      run_load inline "4096x4096x4096 with A and B in every request, 16 closed-loop callers on 4 channels" \
        --shapes=4096x4096x4096 --b=inline --concurrency=16 --channels=4 ;;
    decode)
      run_load decode "16x8192x8192 against a resident [N,K] weight replicated on every GPU, A and D in the gRPC messages, 64 closed-loop callers on 8 channels" \
        --shapes=16x8192x8192 --b=resident --b_layout=nk --concurrency=64 --channels=8 ;;
    *) echo "gpu_scaling: unknown load '$load'" >&2; exit 2 ;;
  esac
done
cat "$OUT/summary.txt"
