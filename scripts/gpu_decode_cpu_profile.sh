#!/usr/bin/env bash
# Where the host CPU goes under the decode load (resident 8192x8192 [N,K], M=16, 64 callers,
# GemmStream, --shm, 8 channels; --max_queue_delay_us=25), on a GPU machine with the binaries
# built (scripts/lib/gpu_env.sh) and, optionally, perf installed.
# Prints per-thread-name CPU of the server and of the load generator over 2 s of the steady
# load, then (if perf runs here) a 2 s perf profile of the server by thread and library and by
# thread and function.
# Server flags: SERVER_FLAGS. The RPC: RPC_FLAGS (default "--rpc=stream --streams_per_channel=8";
# e.g. "--rpc=packed --streams_per_channel=1"). A_IN=messages sends A and D in the gRPC messages
# instead of host shared memory. SERVER=echo profiles grpc_echo_server answering with D's size
# (the round trip's ceiling) instead of gemm_server, under the same load.
# PRELOAD=/path/to/an/allocator.so goes into LD_PRELOAD of both processes. Reports under $OUT
# (default /tmp/gemm-gpu_decode_cpu_profile).
set -uo pipefail
# shellcheck source=lib/gpu_env.sh
source "$(dirname "$0")/lib/gpu_env.sh"
# shellcheck source=lib/thread_cpu.sh
source "$(dirname "$0")/lib/thread_cpu.sh"
export LD_PRELOAD=${PRELOAD:-}
shm=--shm
[ "${A_IN:-shm}" = messages ] && shm=--shm=false
if [ "${SERVER:-gemm}" = echo ]; then
  grpc_echo_server --port=50400 --answer_data=d >"$OUT/server.log" 2>&1 &
else
  gemm_server --backend=cuda --host=127.0.0.1 --port=50400 --metrics_port=0 --self_test=false \
    --max_queue_delay_us=25 ${SERVER_FLAGS:-} >"$OUT/server.log" 2>&1 &
fi
pid=$!
wait_for_server 50400
gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=4 \
  --stable_windows=4 --progress=off $shm --b=resident --b_layout=nk --concurrency=64 \
  --channels=8 ${RPC_FLAGS:---rpc=stream --streams_per_channel=8} --shapes=16x8192x8192 \
  --verify_fraction=0.01 >"$OUT/load.txt" 2>&1 &
lpid=$!
sleep 2.5
{ echo "== server threads (${SERVER:-gemm})"; thread_cpu $pid 2; } >"$OUT/cpu-server.txt" &
tp=$!
{ echo "== gemm_loadgen threads"; thread_cpu "$(pgrep -n gemm_loadgen)" 2; } >"$OUT/cpu-loadgen.txt"
wait $tp
if command -v perf >/dev/null; then
  perf record -F 1999 -g -o "$OUT/perf.data" -p $pid -- sleep 2 >"$OUT/perf-record.log" 2>&1
fi
wait $lpid
kill -TERM $pid
wait $pid
cat "$OUT/cpu-server.txt" "$OUT/cpu-loadgen.txt"
grep -A4 "^point" "$OUT/load.txt"
if [ -s "$OUT/perf.data" ]; then
  perf report -i "$OUT/perf.data" --stdio --no-children --sort comm,dso 2>/dev/null |
    grep -E "^ +[0-9.]+%" | head -40 | tee "$OUT/perf-by-thread-and-library.txt"
  perf report -i "$OUT/perf.data" --stdio --no-children --sort comm,dso,sym 2>/dev/null |
    grep -E "^ +[0-9.]+%" | head -60 | tee "$OUT/perf-by-thread-and-function.txt"
fi
