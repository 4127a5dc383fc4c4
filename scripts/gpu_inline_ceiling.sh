#!/usr/bin/env bash
# The inline network path against the transport's ceiling, on GPU 0, in one run: per transport
# setting (TRANSPORTS, default "default frame-window") and load (LOADS, default "decode64
# decode128 large"), the same gemm_loadgen point against
#   echo-empty    grpc_echo_server answering without output data (the request direction alone)
#   echo-d        grpc_echo_server answering with D's real size (the round-trip ceiling)
#   gemm          gemm_server (CUDA backend), 1% of the answers checked against float64
#   gemm-nobatch  the same with --batching=false (decode loads only)
#   gemm-noheap   the same with --pinned_heap_bytes=0: A copied into pinned memory on arrival
#                 instead of read where gRPC received it
#   main-gemm     $BASELINE/server/gemm_server (a build of the commit to compare with), 1% checked;
#                 only with transport "default" (an older server may not know the transport flags)
# (SERVERS picks among them), every process with the same transport flags. Loads:
#   decode64   16x8192x8192 against a resident [N,K] weight, A and D in the gRPC messages, packed
#              streams, 64 closed-loop callers on 8 channels
#   decode128  the same with 128 callers on 16 channels
#   large      4096x4096x4096 with A and B in every request (64 MiB in, 32 MiB out), unary, 8
#              callers on 1 channel
#   decode64-shm, decode64-ipc  decode64 with A and D in a POSIX shared-memory region / in the load
#              generator's GPU memory (CUDA IPC): the paths that must not regress (with main-gemm:
#              LOADS="decode64-shm decode64-ipc" SERVERS="gemm main-gemm" BASELINE=... )
# Transport settings (flags of every server and of gemm_loadgen; add more to the case below):
#   default       gRPC's defaults
#   frame-window  1 MiB HTTP/2 frames, 8 MiB initial stream window
#   frame         1 MiB HTTP/2 frames
#   window        8 MiB initial stream window
#   nobdp         8 MiB stream window without BDP probing
#   write         1 MiB HTTP/2 frames and a 4 MiB write buffer
#   read          1 MiB HTTP/2 frames and socket reads of 256 KiB to 16 MiB
# For each run: the loadgen's report, the CPU time of the server and of the load generator over
# the loadgen's run (NAME.cpu), CPU per thread name of the server over WINDOW_S seconds mid-run
# (NAME.threads, scripts/lib/thread_cpu.sh) and of the load generator (NAME.lg_threads), the
# GPU's utilization (NAME.util) and each server's log (server-NAME.log; gemm_server's ends with
# its host time per unit by phase). Writes $OUT/inline_ceiling.txt: per load and transport, each
# server's req/s, payload GB/s each way, server and loadgen CPU per request, event-timed GPU time
# per request, answers checked and mismatches, gemm's throughput and CPU per request against
# echo-d's, gemm's latency split into client and transport and server time against echo-d's round
# trip, and gemm_server's phases. A run takes about 15 s: the default grid (22 runs) about 6
# minutes.
set -uo pipefail
here=$(dirname "$0")
# shellcheck source=lib/gpu_env.sh
source "$here/lib/gpu_env.sh"
# shellcheck source=lib/thread_cpu.sh
source "$here/lib/thread_cpu.sh"
TRANSPORTS=${TRANSPORTS:-default frame-window}
LOADS=${LOADS:-decode64 decode128 large}
SERVERS=${SERVERS:-echo-empty echo-d gemm gemm-nobatch}
BASELINE=${BASELINE:-}
WINDOW_S=${WINDOW_S:-4}
PORT=50400
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"

transport_flags() {  # transport_flags NAME: the transport flags of setting NAME
  case $1 in
    default) echo "" ;;
    frame-window) echo "--http2_max_frame_bytes=1048576 --http2_stream_window_bytes=8388608" ;;
    frame) echo "--http2_max_frame_bytes=1048576" ;;
    window) echo "--http2_stream_window_bytes=8388608" ;;
    nobdp) echo "--http2_stream_window_bytes=8388608 --http2_bdp_probe=false" ;;
    write) echo "--http2_max_frame_bytes=1048576 --http2_write_buffer_bytes=4194304" ;;
    read) echo "--http2_max_frame_bytes=1048576 --tcp_min_read_chunk_bytes=262144 \
      --tcp_max_read_chunk_bytes=16777216" ;;
    *) echo "gpu_inline_ceiling: unknown transport '$1'" >&2; exit 2 ;;
  esac
}
load_flags() {  # load_flags LOAD: the load generator's flags of LOAD
  local decode="--shm=false --shapes=16x8192x8192 --b=resident --b_layout=nk --rpc=packed \
    --streams_per_channel=1"
  case $1 in
    decode64) echo "$decode --concurrency=64 --channels=8" ;;
    decode128) echo "$decode --concurrency=128 --channels=16" ;;
    decode64-shm) echo "$decode --concurrency=64 --channels=8 --shm" ;;
    decode64-ipc) echo "$decode --concurrency=64 --channels=8 --shm --shm_device=0" ;;
    large) echo "--shm=false --shapes=4096x4096x4096 --b=inline --b_layout=kn --rpc=unary \
      --concurrency=8 --channels=1" ;;
    *) echo "gpu_inline_ceiling: unknown load '$1'" >&2; exit 2 ;;
  esac
}
for t in $TRANSPORTS; do transport_flags "$t" >/dev/null || exit 2; done
for l in $LOADS; do load_flags "$l" >/dev/null || exit 2; done
case " $SERVERS " in
  *" main-gemm "*)
    [ -x "$BASELINE/server/gemm_server" ] || {
      echo "gpu_inline_ceiling: main-gemm needs BASELINE=<build dir with server/gemm_server>" >&2
      exit 2
    } ;;
esac

# start_server KIND TRANSPORT_FLAGS...: starts server KIND on $PORT; sets $pid.
start_server() {
  local kind=$1 log=$2
  shift 2
  case $kind in
    echo-empty) grpc_echo_server --port=$PORT --answer_data=empty "$@" >"$log" 2>&1 & ;;
    echo-d) grpc_echo_server --port=$PORT --answer_data=d "$@" >"$log" 2>&1 & ;;
    gemm | gemm-nobatch | gemm-noheap | main-gemm)
      local bin=gemm_server extra=()
      case $kind in
        gemm-nobatch) extra=(--batching=false) ;;
        gemm-noheap) extra=(--pinned_heap_bytes=0) ;;
        main-gemm) bin=$BASELINE/server/gemm_server ;;
      esac
      CUDA_VISIBLE_DEVICES=0 "$bin" --backend=cuda --host=127.0.0.1 --port=$PORT --metrics_port=0 \
        --self_test=false "${extra[@]}" "$@" >"$log" 2>&1 &
      ;;
  esac
  pid=$!
}

# ceiling_run NAME KIND LOAD TRANSPORT: one loadgen point against server KIND.
ceiling_run() {
  local name=$1 kind=$2 load=$3 transport=$4 verify=0 t0 t1 s0 s1 smi
  local tf lf
  read -r -a tf <<<"$(transport_flags "$transport")"
  read -r -a lf <<<"$(load_flags "$load")"
  case $kind in gemm* | main-gemm) verify=0.01 ;; esac
  start_server "$kind" "$OUT/server-$name.log" "${tf[@]}"
  wait_for_server $PORT || { kill -TERM "$pid"; wait "$pid"; return 1; }
  nvidia-smi -i 0 --query-gpu=utilization.gpu,clocks.sm --format=csv,noheader,nounits \
    -lms 250 >"$OUT/$name.util" 2>/dev/null &
  smi=$!
  t0=$(date +%s.%N)
  s0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  (sleep 3 && thread_cpu "$pid" "$WINDOW_S" >"$OUT/$name.threads") &
  local sampler=$!
  (
    timeout 120 gemm_loadgen --target=127.0.0.1:$PORT --warmup_s=1 --window_s=2 \
      --max_windows=3 --progress=off --verify_fraction=$verify --json="$OUT/$name.json" \
      "${lf[@]}" "${tf[@]}" >"$OUT/$name.txt" 2>&1 &
    guard=$!
    # The load generator's own threads, over the same window as the server's.
    (sleep 3 && thread_cpu "$(cut -d' ' -f1 "/proc/$guard/task/$guard/children")" "$WINDOW_S" \
      >"$OUT/$name.lg_threads") 2>/dev/null &
    wait "$guard"
    wait
    times >"$OUT/$name.times"
  )
  t1=$(date +%s.%N)
  s1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  echo "$t0 $t1 $s0 $s1 $(getconf CLK_TCK) $(tail -1 "$OUT/$name.times")" >"$OUT/$name.cpu"
  wait $sampler 2>/dev/null
  kill $smi 2>/dev/null
  wait $smi 2>/dev/null
  kill -TERM "$pid"
  wait "$pid"
  echo "== $name | ${lf[*]} ${tf[*]}"
  grep -A1 "^point" "$OUT/$name.txt" | grep -v "^point\|^--"
}

for transport in $TRANSPORTS; do
  for load in $LOADS; do
    for kind in $SERVERS; do
      [ "$kind" = gemm-nobatch ] && [ "$load" = large ] && continue
      [ "$kind" = main-gemm ] && [ "$transport" != default ] && continue
      ceiling_run "$load.$transport.$kind" "$kind" "$load" "$transport"
    done
  done
done
python3 "$here/lib/inline_ceiling_summary.py" "$OUT" | tee "$OUT/inline_ceiling.txt"
