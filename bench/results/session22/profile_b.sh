#!/usr/bin/env bash
# Session 22, second call (one GPU): the CUDA IPC service test with only the server under
# memcheck (scripts/lib/sanitized_server.sh); a perf profile (cpu-clock, by thread and symbol) of
# the server under the decode load with CUDA IPC operands at --max_queue_delay_us=20
# --idle_units_per_device=2; one more round of that point with and without the compute-stream
# switch.
NAME=profile_b
source scripts/lib/device_call.sh
SANITIZED_SERVER=$B/gemm_server SANITIZER_LOG=$L/memcheck-server.log \
  SANITIZED_SERVER_FLAGS=--self_test=false GEMM_SERVER_BINARY=$PWD/scripts/lib/sanitized_server.sh \
  timeout 400 engine_gpu_service_tests --gtest_filter='*CudaIpc*' >"$L/memcheck-test.log" 2>&1
echo "memcheck CudaIpc (server only) rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/memcheck-test.log" | tr '\n' ' ') $(grep -h 'ERROR SUMMARY' "$L"/memcheck-server.log | tr '\n' ' ')" | tee -a "$L/summary.txt"
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
ON="--max_queue_delay_us=20 --idle_units_per_device=2"
# The profile: the server binary with symbols.
gemm_server() { exec "$B/${SERVER:-gemm_server}" "$@"; }
(
  sleep 4
  pid=$(pgrep -n gemm_server_sym)
  perf record -e cpu-clock -F 2999 -o "$L/perf.data" -p "$pid" -- sleep 3 >"$L/perf-record.log" 2>&1
) &
SERVER=gemm_server_sym decode_run prof $DS -- $ON
wait
unset -f gemm_server
if [ -s "$L/perf.data" ]; then
  perf report -i "$L/perf.data" --stdio --no-children --sort comm 2>/dev/null | grep -E "^ +[0-9.]+%" >"$L/perf-by-thread.txt"
  perf report -i "$L/perf.data" --stdio --no-children --sort comm,dso 2>/dev/null | grep -E "^ +[0-9.]+%" | head -40 >"$L/perf-by-thread-dso.txt"
  for t in gemm-launch-0 gemm-done-0 gemm-poll-0; do
    perf report -i "$L/perf.data" --stdio --no-children --comms "$t" --sort dso,sym 2>/dev/null |
      grep -E "^ +[0-9.]+%" | head -60 >"$L/perf-$t.txt"
  done
  perf report -i "$L/perf.data" --stdio --no-children --sort dso,sym 2>/dev/null | grep -E "^ +[0-9.]+%" | head -80 >"$L/perf-all.txt"
  rm -f "$L/perf.data"
fi
decode_run d20i2-r3 $DS -- $ON
decode_run d20i2-split-r3 $DS -- $ON --device_units_on_compute_stream=false
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
date -u >"$L/end.txt"
cat "$L/summary.txt" "$L/decode_summary.txt" "$L/perf-by-thread.txt" | head -80
head -30 "$L/perf-gemm-launch-0.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
