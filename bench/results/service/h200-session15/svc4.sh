#!/usr/bin/env bash
# H200, new work-bound default (1 ms, two units always): engine suites, MoE steps (8 channels)
# on / off, the decode load (ROUNDS=1 scripts/gpu_decode_completion.sh).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/svc4; mkdir -p $L
date -u > $L/start.txt
engine_gpu_tests > $L/engine_gpu_tests.log 2>&1; echo "engine_gpu_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_tests.log | tr '\n' ' ')" >> $L/summary.txt
GEMM_SERVER_BINARY=$B/gemm_server engine_gpu_service_tests > $L/engine_gpu_service_tests.log 2>&1; echo "engine_gpu_service_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' $L/engine_gpu_service_tests.log | tr '\n' ' ')" >> $L/summary.txt
port=50400
for proj in 1x28672x4096 1x4096x14336; do
  for mode in d50 d50w7 off; do
    port=$((port + 1))
    case $mode in d50) flags=(--max_queue_delay_us=50);; d50w7) flags=(--max_queue_delay_us=50 --max_work_in_flight_ms_per_device=7);; off) flags=(--batching=false);; esac
    gemm_server --backend=cuda --host=127.0.0.1 --port=$port "${flags[@]}" > $L/server-$proj-$mode.log 2>&1 &
    pid=$!
    for _ in $(seq 300); do gemm_client --target=127.0.0.1:$port info > /dev/null 2>&1 && break; sleep 0.2; done
    gemm_loadgen --target=127.0.0.1:$port --warmup_s=1 --window_s=2 --max_windows=4 --progress=off \
      --shapes=$proj --b=resident --b_layout=nk --experts=8:2 --concurrency=64 --channels=8 \
      --verify_fraction=0.01 --json=$L/moe8-$proj-$mode.json > $L/moe8-$proj-$mode.txt 2>&1
    kill -TERM $pid; wait $pid
  done
done
mkdir -p $L/decode && OUT=$L/decode ROUNDS=1 timeout 300 scripts/gpu_decode_completion.sh > $L/decode.log 2>&1; echo "decode rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf svc4.tgz svc4 && rm -rf svc4
