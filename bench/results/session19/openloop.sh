#!/usr/bin/env bash
# Session 19, one GPU: open-loop (Poisson) decode over --shm at 10k-70k req/s offered, one
# server per --max_queue_delay_us (0, 25, 50, 100, 200), with the loadgen's open loop sent from 4
# threads (4ec6b77); first a check of 1 dispatcher thread against 4 at 60k req/s. Then, for the
# GPU's own ceiling figures: copy_bw and the closed-loop points of ceiling.sh (OPEN_ONLY=1 skips).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/openloop-$gpu; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
open_point() {  # open_point NAME RATES DELAY [loadgen flags...]
  local name=$1 rates=$2 d=$3; shift 3
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 --metrics_port=0 \
    --self_test=false --max_queue_delay_us=$d > $L/server-$name.log 2>&1 &
  local pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50400 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 200 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --channels=8 --rpc=packed --streams_per_channel=1 \
    --shapes=16x8192x8192 --verify_fraction=0.01 --shm_output_slots=1024 --max_outstanding=1024 \
    --rate=$rates --arrival=poisson --json=$L/$name.json "$@" > $L/$name.txt 2>&1
  kill -TERM $pid; wait $pid
  echo "== $name (delay $d, $*)"; grep "^rate=" $L/$name.txt
}
open_point disp1 60000 50 --dispatch_threads=1
open_point disp4 60000 50 --dispatch_threads=4
for d in 0 25 50 100 200; do open_point open-d$d 10000,30000,50000,60000,70000 $d; done
if [ -z "${OPEN_ONLY:-}" ]; then
  nvidia-smi -q | grep -iA3 "PCIe Generation\|Link Width" > $L/pcie.txt
  CUDA_VISIBLE_DEVICES=0 copy_bw --seconds=1 --streams=2 256 1024 4096 16384 | tee $L/copy_bw.txt
  DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
  decode_run shm-nobatch $DS -- --batching=false
  decode_run c64-d50 $DS -- --max_queue_delay_us=50
  decode_run c64-d100 $DS -- --max_queue_delay_us=100
  decode_run ceiling-d50 --shapes=16x128x128 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 -- --max_queue_delay_us=50
  python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
  head -8 $L/decode_summary.txt
fi
date -u > $L/end.txt
cd $L/.. && tar czf openloop-$gpu.tgz openloop-$gpu && rm -rf openloop-$gpu
