#!/usr/bin/env bash
# Session 20, one GPU: the batcher's targeted wake-ups (gemm_server) against main before them
# (gemm_server_old), two rounds in alternating order, closed loop over --shm with packed streams
# on 8 channels: decode 16x8192x8192 at 64, 8 and 1 callers, and 16x128x128 (no GPU work to
# speak of) at 64, with per-thread-name CPU mid-run. First the engine suites on the new server.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/wake-$gpu; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
suite() {  # suite NAME [env...]
  local t=$1; shift
  env "$@" timeout 240 $t > $L/$t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/$t.log | tr '\n' ' ')" >> $L/summary.txt
}
suite engine_gpu_tests
suite engine_gpu_service_tests GEMM_SERVER_BINARY=$B/gemm_server
suite batcher_test
cat $L/summary.txt
source scripts/lib/thread_cpu.sh
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader > $L/gpu.txt
DS="--rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
point() {  # point NAME SERVER_BINARY SHAPE CALLERS
  local name=$1 srv=$2 shape=$3 c=$4
  CUDA_VISIBLE_DEVICES=0 $srv --backend=cuda --host=127.0.0.1 --port=50400 \
    --metrics_port=0 --self_test=false > $L/server-$name.log 2>&1 &
  local pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50400 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 90 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --concurrency=$c --channels=8 \
    --shapes=$shape $DS --json=$L/$name.json > $L/$name.txt 2>&1 &
  local lp=$!
  sleep 3
  { thread_cpu $pid 2; } > $L/cpu-$name-server.txt &
  local tp=$!
  { thread_cpu "$(pgrep -n gemm_loadgen)" 2; } > $L/cpu-$name-loadgen.txt
  wait $tp; wait $lp
  kill -TERM $pid; wait $pid
  echo "== $name $(grep -A1 '^point' $L/$name.txt | tail -1 | awk '{print $3, $6, $8}') | $(grep -E 'gemm-launch|nexting|gemm-done|gemm-poll|machine' $L/cpu-$name-server.txt | awk '{printf "%s %s ", $1, $(NF)}')"
}
for r in 1 2; do
  if [ $r = 1 ]; then order="new old"; else order="old new"; fi
  for v in $order; do
    s=$B/gemm_server; [ $v = old ] && s=$B/gemm_server_old
    point dec64-$v-r$r $s 16x8192x8192 64
    point ceil64-$v-r$r $s 16x128x128 64
    point dec8-$v-r$r $s 16x8192x8192 8
    point dec1-$v-r$r $s 16x8192x8192 1
  done
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf wake-$gpu.tgz wake-$gpu && rm -rf wake-$gpu
