#!/usr/bin/env bash
# Session 23 (one GPU), main 553e1b6: where the server's and the load generator's CPU goes under
# the decode load at delay 20 / idle 2 (CUDA IPC operands). Point 1: flat cpu-clock profiles of
# both processes at once (perf, 2999 Hz, 3 s). Point 2: call graphs (dwarf, 499 Hz, 2 s), reported
# inclusive per symbol for each thread kind. Binaries with symbols (*_sym, unstripped).
NAME=profile_c
source scripts/lib/device_call.sh
source scripts/lib/decode_run.sh
decode_machine
mkdir -p "$L/bin" && ln -sf "$B/gemm_loadgen_sym" "$L/bin/gemm_loadgen" && export PATH=$L/bin:$PATH
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
ON="--max_queue_delay_us=20 --idle_units_per_device=2"
gemm_server() { exec "$B/gemm_server_sym" "$@"; }
prof() {  # prof TAG PERF_FLAGS...: records both processes 4 s into the point
  local tag=$1; shift
  sleep 4
  local sp=$(pgrep -n gemm_server_sym) lp=$(pgrep -n gemm_loadgen)
  perf record "$@" -o "$L/perf-$tag-server.data" -p "$sp" -- sleep ${SECS:-3} >"$L/perf-$tag-server.log" 2>&1 &
  perf record "$@" -o "$L/perf-$tag-loadgen.data" -p "$lp" -- sleep ${SECS:-3} >"$L/perf-$tag-loadgen.log" 2>&1 &
  wait
}
(prof flat -e cpu-clock -F 2999) &
decode_run flat $DS -- $ON
wait
(SECS=2 prof graph -e cpu-clock -F 499 --call-graph dwarf,8192) &
decode_run graph $DS -- $ON
wait
decode_run plain $DS -- $ON
for p in server loadgen; do
  d=$L/perf-flat-$p.data
  perf report -i $d --stdio --no-children --sort comm 2>/dev/null | grep -E "^ +[0-9.]+%" >"$L/flat-$p-threads.txt"
  perf report -i $d --stdio --no-children --sort comm,dso,sym 2>/dev/null | grep -E "^ +[0-9.]+%" | head -150 >"$L/flat-$p-syms.txt"
  d=$L/perf-graph-$p.data
  perf report -i $d --stdio --children --sort comm,sym -g none --percent-limit 1.5 2>/dev/null | grep -E "^ +[0-9.]+%" | head -250 >"$L/graph-$p-inclusive.txt"
  perf report -i $d --stdio --no-children --sort sym -g caller,0.5,callee --percent-limit 2 2>/dev/null | head -600 >"$L/graph-$p-callers.txt"
done
rm -f "$L"/perf-*.data
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
head -8 "$L/decode_summary.txt"
for p in server loadgen; do echo "== $p"; head -12 "$L/flat-$p-threads.txt"; done
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
