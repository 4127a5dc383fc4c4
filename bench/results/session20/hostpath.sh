#!/usr/bin/env bash
# Session 20, one GPU: the engine suites on the new default delay (50 us), then where the host
# path's ceiling sits. Closed loop, 64 callers, 8 channels, packed streams, --shm, resident [N,K]
# B; every point verifies 1% of its answers against float64.
#  1. engine_gpu_tests, engine_gpu_service_tests, batcher_test, unit_plan_test.
#  2. decode 16x8192x8192: batching off; on at the default.
#  3. 16x128x128 (no GPU work to speak of) on the CUDA backend and on the CPU backend (gRPC,
#     batcher and a CPU worker, no CUDA), with per-thread-name CPU of both processes mid-run.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/hostpath-$gpu; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
suite() {  # suite NAME [env...]
  local t=$1; shift
  env "$@" timeout 240 $t > $L/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$t.log | tr '\n' ' ')" >> $L/summary.txt
}
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
suite batcher_test
suite unit_plan_test
cat $L/summary.txt
source scripts/lib/decode_run.sh
source scripts/lib/thread_cpu.sh
decode_machine
DS="--rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
decode_run shm-nobatch --shapes=16x8192x8192 $DS -- --batching=false
decode_run c64-default --shapes=16x8192x8192 $DS --
# profiled point: like decode_run, plus thread CPU 3 s into the run
prof_point() {  # prof_point NAME SHAPE [server flags...]
  local name=$1 shape=$2; shift 2
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 \
    --metrics_port=0 --self_test=false "$@" > $L/server-$name.log 2>&1 &
  local pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50400 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 90 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --concurrency=64 --channels=8 \
    --shapes=$shape $DS --json=$L/$name.json > $L/$name.txt 2>&1 &
  local lp=$!
  sleep 3
  { echo "== gemm_server threads"; thread_cpu $pid 2; } > $L/cpu-$name-server.txt &
  local tp=$!
  { echo "== gemm_loadgen threads"; thread_cpu "$(pgrep -n gemm_loadgen)" 2; } > $L/cpu-$name-loadgen.txt
  wait $tp; wait $lp
  kill -TERM $pid; wait $pid
  echo "== $name | $shape | server $*"; grep -A4 "^point" $L/$name.txt | grep -v "^point\|^--\|^server"
  cat $L/cpu-$name-server.txt $L/cpu-$name-loadgen.txt
}
prof_point ceil-cuda 16x128x128
prof_point ceil-cpu 16x128x128 --backend=cpu --cpu_workers=8
prof_point ceil-cpu-w2 16x128x128 --backend=cpu --cpu_workers=2
prof_point dec-cuda 16x8192x8192
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cat $L/decode_summary.txt | head -12
cd $L/.. && tar czf hostpath-$gpu.tgz hostpath-$gpu && rm -rf hostpath-$gpu
