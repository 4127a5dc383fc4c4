#!/usr/bin/env bash
# The GPU time of the server's coalesced decode batches against the kernels alone at the same M,
# on GPU 0. The decode load (16x8192x8192 against a resident [N,K] weight, 64 callers, packed
# streams) runs with every unit's GPU phases timed, once with A and D in GPU memory (CUDA IPC:
# "ipc") and once in host shared memory ("host"); gemm_loadgen reports the compute time by the
# rows of the batch (compute_ms_by_batch_rows). gemm_bench then times ours and cuBLASLt at each M
# that ran (B [N,K]), and lib/batch_gpu_time.py compares them batch by batch: the service's
# compute / the better of ours and cuBLASLt at that M.
#   scripts/gpu_batch_gpu_time.sh
# Env: MODES (default "ipc host"), SERVER_FLAGS (default "--max_units_in_flight_per_device=1
# --gpu_timing_every=1": one unit at a time, so no other unit's copies run beside the timed
# kernels; "--gpu_timing_every=1" alone measures the server's default overlap). The compute span
# starts when the unit's copy-in has finished on the compute stream: over CUDA IPC that copy is
# shorter than the host's launch of the GEMM, so the span also holds that launch; over host
# shared memory the H2D copy outlasts it. Reports under $OUT: MODE.json (the loads), batch_m/
# m_sweep.txt (the rows timed), bench.jsonl (gemm_bench, back to back) and bench-idle.jsonl
# (gemm_bench --idle_stream: each call from an idle stream, the launch path inside, as a unit on
# an idle GPU sees it), batch_gpu_time.txt (the comparisons, also printed).
set -uo pipefail
here=$(dirname "$0")
# shellcheck source=lib/gpu_env.sh
source "$here/lib/gpu_env.sh"
# shellcheck source=lib/decode_run.sh
source "$here/lib/decode_run.sh"
decode_machine
modes=${MODES:-ipc host}
mkdir -p "$OUT/batch_m"
: >"$OUT/batch_m/rows.txt"
for mode in $modes; do
  place=()
  [ "$mode" = ipc ] && place=(--shm_device=0)
  # shellcheck disable=SC2086
  decode_run "$mode" $DECODE_LOAD "${place[@]}" -- \
    ${SERVER_FLAGS:---max_units_in_flight_per_device=1 --gpu_timing_every=1}
  python3 "$here/lib/batch_gpu_time.py" rows "$OUT/$mode.json" 8192 8192 >>"$OUT/batch_m/rows.txt" ||
    exit 1
done
{
  echo "# M N K batch: the batch sizes of every mode"
  grep -v '^#' "$OUT/batch_m/rows.txt" | sort -n -u
} >"$OUT/batch_m/m_sweep.txt"
gemm_bench --set m_sweep --shapes "$OUT/batch_m" --layout nk --check --json \
  >"$OUT/bench.jsonl" 2>"$OUT/bench.log" || exit 1
gemm_bench --set m_sweep --shapes "$OUT/batch_m" --layout nk --json --idle_stream \
  >"$OUT/bench-idle.jsonl" 2>"$OUT/bench-idle.log" || exit 1
for mode in $modes; do
  echo "== $mode: kernels timed back to back"
  python3 "$here/lib/batch_gpu_time.py" compare "$OUT/$mode.json" "$OUT/bench.jsonl"
  echo "== $mode: kernels timed from an idle stream"
  python3 "$here/lib/batch_gpu_time.py" compare "$OUT/$mode.json" "$OUT/bench-idle.jsonl"
done | tee "$OUT/batch_gpu_time.txt"
