#!/usr/bin/env bash
# Session 20, one GPU (asked for an H200, ran on an H100): the batcher's targeted wake-ups (gemm_server, fd23771) against main
# before them (gemm_server_old, a5c4390), two rounds in alternating order, closed loop over --shm
# with packed streams on 8 channels: decode 16x8192x8192 batching off and on (default delay) at
# 64 callers, and 16x128x128 at 64. Then a flat perf profile (cpu-clock, by library and symbol)
# of the new server and of the load generator under the 16x128x128 and decode loads.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/ab-$gpu; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--rpc=packed --streams_per_channel=1 --verify_fraction=0.01"
mkdir -p $PWD/.old-bin && ln -sf $B/gemm_server_old $PWD/.old-bin/gemm_server
run_as() {  # run_as new|old decode_run args...: decode_run with that server first on PATH
  local v=$1; shift
  if [ $v = old ]; then PATH=$PWD/.old-bin:$PATH decode_run "$@"; else decode_run "$@"; fi
}
for r in 1 2; do
  if [ $r = 1 ]; then order="new old"; else order="old new"; fi
  for v in $order; do
    run_as $v nobatch-$v-r$r --shapes=16x8192x8192 $DS -- --batching=false
    run_as $v dec64-$v-r$r --shapes=16x8192x8192 $DS --
    run_as $v ceil64-$v-r$r --shapes=16x128x128 $DS --
  done
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
head -14 $L/decode_summary.txt
prof() {  # prof NAME SHAPE
  local name=$1 shape=$2
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 \
    --metrics_port=0 --self_test=false > $L/server-prof-$name.log 2>&1 &
  local pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50400 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 60 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --concurrency=64 --channels=8 \
    --shapes=$shape $DS > $L/prof-$name.txt 2>&1 &
  local lp=$!
  sleep 3
  perf record -e cpu-clock -F 1999 -o $L/perf-$name-server.data -p $pid -- sleep 3 > /dev/null 2>&1 &
  local pp=$!
  perf record -e cpu-clock -F 1999 -o $L/perf-$name-loadgen.data -p "$(pgrep -n gemm_loadgen)" -- sleep 3 > /dev/null 2>&1
  wait $pp; wait $lp
  kill -TERM $pid; wait $pid
  for side in server loadgen; do
    perf report -i $L/perf-$name-$side.data --stdio --no-children --sort dso 2>/dev/null | grep -E "^ +[0-9.]+%" | head -15 > $L/perf-$name-$side-dso.txt
    perf report -i $L/perf-$name-$side.data --stdio --no-children --sort dso,sym 2>/dev/null | grep -E "^ +[0-9.]+%" | head -80 > $L/perf-$name-$side-sym.txt
    perf report -i $L/perf-$name-$side.data --stdio --no-children --sort comm 2>/dev/null | grep -E "^ +[0-9.]+%" | head -15 > $L/perf-$name-$side-comm.txt
    rm -f $L/perf-$name-$side.data
  done
  echo "== perf $name"; grep -A1 "^point" $L/prof-$name.txt | tail -1
  head -12 $L/perf-$name-server-dso.txt; head -25 $L/perf-$name-server-sym.txt
}
prof ceil 16x128x128
prof dec 16x8192x8192
date -u > $L/end.txt
cd $L/.. && tar czf ab-$gpu.tgz ab-$gpu && rm -rf ab-$gpu
