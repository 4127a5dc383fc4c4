#!/usr/bin/env bash
# Session 19, one GPU: the PCIe ceiling of the decode load next to its batching ratio, and an
# open-loop sweep of --max_queue_delay_us.
#  1. copy_bw: pinned H2D, D2H and both at once at 256 KiB (one request's A or D) to 16 MiB.
#  2. decode 16x8192x8192 over --shm (resident [N,K] B, 64 closed-loop callers): batching off,
#     on at 50 and 100 us; the same path with 16x128x128 (no GPU work to speak of).
#  3. open loop, Poisson arrivals at 5k-60k req/s, one server per delay (0, 50, 100, 200 us).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/ceiling-$gpu; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
nvidia-smi -q | grep -iA3 "PCIe Generation\|Link Width" > $L/pcie.txt
CUDA_VISIBLE_DEVICES=0 copy_bw --seconds=1 --streams=2 256 1024 4096 16384 | tee $L/copy_bw.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
decode_run shm-nobatch $DS -- --batching=false
decode_run c64-d50 $DS -- --max_queue_delay_us=50
decode_run c64-d100 $DS -- --max_queue_delay_us=100
decode_run ceiling-d50 --shapes=16x128x128 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 -- --max_queue_delay_us=50
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
cat $L/decode_summary.txt
for d in 0 50 100 200; do
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 --metrics_port=0 \
    --self_test=false --max_queue_delay_us=$d > $L/server-open-d$d.log 2>&1 &
  pid=$!
  for _ in $(seq 300); do gemm_client --target=127.0.0.1:50400 info >/dev/null 2>&1 && break; sleep 0.2; done
  timeout 150 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
    --progress=off --shm --b=resident --b_layout=nk --channels=8 --rpc=packed --streams_per_channel=1 \
    --shapes=16x8192x8192 --verify_fraction=0.01 --shm_output_slots=1024 --max_outstanding=1024 \
    --rate=5000,20000,40000,60000 --arrival=poisson --json=$L/open-d$d.json > $L/open-d$d.txt 2>&1
  kill -TERM $pid; wait $pid
  echo "== open loop, delay $d"; grep -v "^$" $L/open-d$d.txt | tail -12
done
date -u > $L/end.txt
cd $L/.. && tar czf ceiling-$gpu.tgz ceiling-$gpu && rm -rf ceiling-$gpu
