#!/usr/bin/env bash
# MoE decode steps over 8 channels: batching on (50 us) vs off.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/svc3; mkdir -p $L
date -u > $L/start.txt
port=50300
for proj in 1x28672x4096 1x4096x14336; do
  for mode in w1 w05; do
    port=$((port + 1))
    flags=(--max_queue_delay_us=50 --max_work_in_flight_ms_per_device=1); [ $mode = w05 ] && flags=(--max_queue_delay_us=50 --max_work_in_flight_ms_per_device=0.5)
    gemm_server --backend=cuda --host=127.0.0.1 --port=$port "${flags[@]}" > $L/server-$proj-$mode.log 2>&1 &
    pid=$!
    for _ in $(seq 300); do gemm_client --target=127.0.0.1:$port info > /dev/null 2>&1 && break; sleep 0.2; done
    gemm_loadgen --target=127.0.0.1:$port --warmup_s=1 --window_s=2 --max_windows=4 --progress=off \
      --shapes=$proj --b=resident --b_layout=nk --experts=8:2 --concurrency=64 --channels=8 \
      --verify_fraction=0.01 --json=$L/moe8-$proj-$mode.json > $L/moe8-$proj-$mode.txt 2>&1
    kill -TERM $pid; wait $pid
  done
done
date -u > $L/end.txt
cd $OUT && tar czf svc3.tgz svc3 && rm -rf svc3
