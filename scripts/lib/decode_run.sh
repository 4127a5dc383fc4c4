# shellcheck shell=bash
# One service point on GPU 0, shared by the scripts/gpu_*.sh measurements (source it after
# scripts/lib/gpu_env.sh, which sets $OUT and defines wait_for_server).
# decode_run NAME LOADGEN_FLAGS... -- SERVER_FLAGS... starts gemm_server on GPU 0 (port 50400, no
# self-test) with SERVER_FLAGS, runs one closed-loop gemm_loadgen point against it with the decode
# load's settings (resident [N,K] B, A and D in a POSIX shared-memory region, 64 callers, 8
# channels) followed by LOADGEN_FLAGS (later flags win, e.g. --shm=false), stops the server and
# prints the point's table rows. Reports: $OUT/NAME.{json,txt,cpu,util}, $OUT/server-NAME.log
# (NAME.cpu: CPU time of both processes over the run; NAME.util: the GPU's utilization and SM
# clock sampled every 250 ms; scripts/lib/decode_summary.py turns them into a table).
# decode_machine records the GPU (name, SM clock) and the host's core count in $OUT/gpu.txt.
# DECODE_LOAD: the decode load's gemm_loadgen flags (16x8192x8192, packed streams, 0.1% of the
# answers checked), for decode_run's LOADGEN_FLAGS.
# shellcheck disable=SC2034
DECODE_LOAD="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001"

decode_machine() {
  nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
  nproc | tee -a "$OUT/gpu.txt"
}

decode_run() {
  local name=$1
  shift
  local lg=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do lg+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  CUDA_VISIBLE_DEVICES=0 gemm_server --backend=cuda --host=127.0.0.1 --port=50400 \
    --metrics_port=0 --self_test=false "$@" >"$OUT/server-$name.log" 2>&1 &
  local pid=$!
  wait_for_server 50400
  # CPU of both processes over the loadgen's run: the server's from /proc, the loadgen's from the
  # shell's `times` (children); $OUT/NAME.cpu holds the raw figures (decode_summary.py turns
  # them into CPU per request).
  local t0 s0 t1 s1
  nvidia-smi -i 0 --query-gpu=utilization.gpu,clocks.sm --format=csv,noheader,nounits \
    -lms 250 >"$OUT/$name.util" 2>/dev/null &
  local smi=$!
  t0=$(date +%s.%N)
  s0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  (
    timeout 90 gemm_loadgen --target=127.0.0.1:50400 --warmup_s=1 --window_s=2 --max_windows=3 \
      --progress=off --shm --b=resident --b_layout=nk --concurrency=64 --channels=8 \
      --json="$OUT/$name.json" "${lg[@]}" >"$OUT/$name.txt" 2>&1
    times >"$OUT/$name.times"  # not in a pipeline: that would be a fresh subshell
  )
  t1=$(date +%s.%N)
  s1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  echo "$t0 $t1 $s0 $s1 $(getconf CLK_TCK) $(tail -1 "$OUT/$name.times")" >"$OUT/$name.cpu"
  kill $smi 2>/dev/null
  wait $smi 2>/dev/null
  kill -TERM $pid
  wait $pid
  echo "== $name | loadgen ${lg[*]} | server $*"
  grep -A4 "^point" "$OUT/$name.txt" | grep -v "^point\|^--\|^server"
}
