#!/usr/bin/env bash
# Resident B counted once per unit: decode 1 ms (default) vs 7 ms, MoE up at the default; work-bound engine test.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
export OUT=$OUT/ab2; mkdir -p $OUT
engine_gpu_tests --gtest_filter='*InFlight*:*Expert*' > $OUT/engine.log 2>&1; echo "engine rc=$?" > $OUT/summary.txt
source scripts/lib/decode_run.sh
decode_machine
D="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
for r in 1 2; do
  decode_run "r$r-w1" $D -- --max_queue_delay_us=50
  decode_run "r$r-w7" $D -- --max_queue_delay_us=50 --max_work_in_flight_ms_per_device=7
done
M="--shapes=1x28672x4096 --verify_fraction=0.01 --experts=8:2 --shm=false"
gemm_server --backend=cuda --host=127.0.0.1 --port=50500 --max_queue_delay_us=50 > $OUT/server-moe.log 2>&1 &
pid=$!; for _ in $(seq 300); do gemm_client --target=127.0.0.1:50500 info > /dev/null 2>&1 && break; sleep 0.2; done
gemm_loadgen --target=127.0.0.1:50500 --warmup_s=1 --window_s=2 --max_windows=3 --progress=off --shapes=1x28672x4096 --b=resident --b_layout=nk --experts=8:2 --concurrency=64 --channels=8 --verify_fraction=0.01 --json=$OUT/moe-w1.json > $OUT/moe-w1.txt 2>&1
kill -TERM $pid; wait $pid
for f in $OUT/r*.txt $OUT/moe*.txt; do echo "== $f"; grep -A1 "^point" $f | sed -n '2p;5p'; grep verify $f; done
cat $OUT/summary.txt
cd $OUT/.. && tar czf ab2.tgz ab2 && rm -rf ab2
