#!/usr/bin/env bash
# One GPU against several, on a machine with two or more: each load runs against the same server
# binary once with CUDA_VISIBLE_DEVICES=0 and once with GPUS (default: every GPU), resident
# matrices replicated on every GPU (--replicate_resident). LOADS (default "compute compute-host"):
#   compute       2048x28672x28672 against a resident weight (1.6 GB; 3.4 TFLOP a request), A and
#                 D in GPU memory of the GPU that serves them (CUDA IPC): one gemm_loadgen per
#                 GPU, each with its region on its GPU and 8 callers, run at once and summed, 1%
#                 of answers checked. The bytes never cross host memory: the GPUs bound it.
#   compute-host  the same shapes with A and D in one POSIX shared-memory region, 8 callers per
#                 GPU: every byte crosses host memory and PCIe, so it is compared with the host's
#                 copy ceiling (copy_bw, every GPU copying both ways at once), measured first
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
ipc_windows=(--warmup_s=4 --window_s=3 --stable_windows=4 --max_windows=4)
nvidia-smi --query-gpu=index,name,memory.total,clocks.sm --format=csv | tee "$OUT/gpu.txt"
: >"$OUT/summary.txt"

start_server() {  # start_server NAME DEVICES: starts gemm_server on $port; sets server_pid
  port=$((port + 1))
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$2 gemm_server --backend=cuda --host=127.0.0.1 --port=$port \
    --metrics_port=0 --replicate_resident ${SERVER_FLAGS:-} >"$OUT/server-$1.log" 2>&1 &
  server_pid=$!
  wait_for_server $port
}

stop_server() {  # stop_server NAME: stops it and adds the reports' tails to summary.txt
  kill -TERM "$server_pid"
  wait "$server_pid"
  { echo "== $1"; for t in "$OUT/$1"*.txt; do tail -n 16 "$t"; done; } >>"$OUT/summary.txt"
}

run_point() {  # run_point NAME DEVICES LOADGEN_FLAGS...: one gemm_loadgen; report NAME.json
  local name=$1 devices=$2
  shift 2
  start_server "$name" "$devices"
  timeout 300 gemm_loadgen --target=127.0.0.1:$port --warmup_s=1 --window_s=2 --max_windows=4 \
    --progress=off --json="$OUT/$name.json" "$@" >"$OUT/$name.txt" 2>&1
  stop_server "$name"
}

run_ipc_point() {  # run_ipc_point NAME DEVICES LOADGEN_FLAGS...: one gemm_loadgen per GPU, at once
  local name=$1 devices=$2 i pids=()
  shift 2
  start_server "$name" "$devices"
  local count
  count=$(echo "$devices" | tr ',' '\n' | wc -l)
  for ((i = 0; i < count; i++)); do
    CUDA_VISIBLE_DEVICES=$devices timeout 300 gemm_loadgen --target=127.0.0.1:$port \
      --shm --shm_device=$i --seed=$((i + 1)) "${ipc_windows[@]}" --progress=off \
      --json="$OUT/$name-dev$i.json" "$@" >"$OUT/$name-dev$i.txt" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  stop_server "$name"
}

record() {  # record LOAD WHAT REPORTS_1 REPORTS_N: the entry gpus-<n>-LOAD
  python3 "$here/lib/service_results.py" "$RESULTS_DIR" --load "gpus-$ngpus-$1" --what "$2" \
    --command "LOADS=$1 scripts/gpu_scaling.sh" \
    "--point=gpus-1:$3:--replicate_resident (CUDA_VISIBLE_DEVICES=0)" \
    "--point=gpus-$ngpus:$4:--replicate_resident (CUDA_VISIBLE_DEVICES=$GPUS)"
}

run_load() {  # run_load LOAD WHAT LOADGEN_FLAGS...
  local load=$1 what=$2
  shift 2
  run_point "$load-gpus1" 0 "$@"
  run_point "$load-gpus$ngpus" "$GPUS" "$@"
  record "$load" "$what" "$OUT/$load-gpus1.json" "$OUT/$load-gpus$ngpus.json"
}

run_ipc_load() {  # run_ipc_load LOAD WHAT LOADGEN_FLAGS...: reports of every GPU's loadgen summed
  local load=$1 what=$2 i reports=""
  shift 2
  run_ipc_point "$load-gpus1" 0 "$@"
  run_ipc_point "$load-gpus$ngpus" "$GPUS" "$@"
  for ((i = 0; i < ngpus; i++)); do reports+="${reports:++}$OUT/$load-gpus$ngpus-dev$i.json"; done
  record "$load" "$what" "$OUT/$load-gpus1-dev0.json" "$reports"
}

copy_ceiling() {  # copy_ceiling: host <-> GPU copy rate, both ways at once, of one GPU and of all
  local g line
  for g in 1 "$ngpus"; do
    line=$(CUDA_VISIBLE_DEVICES=$GPUS copy_bw --seconds=2 --gpus="$g" 32768 | tail -n 1)
    echo "copy_bw --gpus=$g: $line" | tee -a "$OUT/summary.txt" >&2
    echo "$line" | sed -E 's/.*= *([0-9.]+) GB\/s.*/\1/'
  done | paste -sd' '
}

for load in ${LOADS:-compute compute-host}; do
  case $load in
    compute)
      run_ipc_load compute "2048x28672x28672 against a resident weight replicated on every GPU (3.4 TFLOP a request), A and D in GPU memory of the serving GPU (CUDA IPC), one gemm_loadgen per GPU with 8 closed-loop callers on 2 channels, run at once and summed (latency: the slowest GPU's); 1% of answers checked" \
        --shapes=2048x28672x28672 --b=resident --b_layout=nk --concurrency=8 --channels=2 \
        --verify_fraction=0.01 ;;
    compute-host)
      read -r copy1 copyn < <(copy_ceiling)
      run_load compute-host "2048x28672x28672 against a resident weight replicated on every GPU (3.4 TFLOP a request), A and D in a POSIX shared-memory region, $callers closed-loop callers on 4 channels; 1% of answers checked. Host copy ceiling (copy_bw, 32 MiB copies both ways at once): $copy1 GB/s with one GPU, $copyn GB/s with $ngpus" \
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
