#!/usr/bin/env bash
# Measures every launch variant of the SM90 kernel over the m_sweep set, for choosing the tile,
# cluster and split heuristics: first the dispatch as it is (the whole set), then, for M <= 1024
# (MIN_M..MAX_M), each forced WGMMA tile in 1- and 2-CTA clusters with the tail split-K as
# planned and without it, and forced split factors (27 runs). Every run checks its rows against
# cuBLASLt and times cuBLAS in the same process. Runs on a GPU machine with gemm_bench built
# (build/bench or PATH); writes
#   $OUT/m_sweep-<variant>.jsonl   gemm_bench --json lines of each variant (variant "dispatch":
#                                  the heuristics' own choice)
#   $OUT/m_sweep-variants.log      the tables, exit codes and the time of each run
#   $OUT/best_variants.{txt,csv}   bench/best_variants.py over the files above
# Stops starting variants once BUDGET_S seconds (default 300) have passed and gives each run at
# most 120 s, so the whole run stays within a bounded time; the log names what it skipped.
#   scripts/gpu_m_sweep_variants.sh [extra gemm_bench flags...]
# Env: REPS (default 20), WARMUP (default 3), BUDGET_S, and the M range of the forced variants:
# MIN_M (default 1), MAX_M (default 1024). SWAP=1 measures the swap-AB tiles instead: the
# dispatch, the dispatch without swap-AB tiles ("plain", the whole set) and each swap-AB width
# in 1- and 2-CTA clusters. SHAPES=FILE times the rows of FILE (the format of
# bench/shapes/m_sweep.txt) instead of the m_sweep set, in every variant.
set -uo pipefail
# shellcheck source=lib/gpu_env.sh
source "$(dirname "$0")/lib/gpu_env.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
reps=${REPS:-20}
warmup=${WARMUP:-3}
min_m=${MIN_M:-1}
max_m=${MAX_M:-1024}
budget=${BUDGET_S:-300}
log=$OUT/m_sweep-variants.log
shapes=$(mktemp -d)
awk -v min="$min_m" -v max="$max_m" '/^#/ || ($1 >= min && $1 <= max)' \
  "${SHAPES:-$root/bench/shapes/m_sweep.txt}" >"$shapes/m_sweep.txt"
: >"$log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv >>"$log"

# variant name | gemm_bench flags (forced variants run the WGMMA kernel directly: --sm90_main),
# most likely to matter first: a budget cut drops the last.
variants=(
  "dispatch|"
)
if [ "${SWAP:-0}" = 1 ]; then
  variants+=("plain|--swap_ab off")
  for width in 144 160 176 192 208 224 240; do
    for cluster in 1 2; do
      variants+=("s128x$width-c$cluster|--sm90_main --swap_ab on --tile 128x$width --cluster $cluster")
    done
  done
fi
forced_tile() {  # forced_tile TILE: the tile in both cluster sizes, split as planned and not
  for cluster in 2 1; do
    variants+=("t$1-c$cluster|--sm90_main --tile $1 --cluster $cluster")
    variants+=("t$1-c$cluster-nosplit|--sm90_main --tile $1 --cluster $cluster --no_split")
  done
}
if [ "${SWAP:-0}" != 1 ]; then
  for tile in 128x256 64x256 128x128 64x128; do forced_tile "$tile"; done
  for split in 2 4; do
    variants+=("t128x256-c2-split$split|--sm90_main --tile 128x256 --cluster 2 --split $split")
    variants+=("t64x256-c1-split$split|--sm90_main --tile 64x256 --cluster 1 --split $split")
    variants+=("t128x128-c1-split$split|--sm90_main --tile 128x128 --cluster 1 --split $split")
  done
  forced_tile 256x128
fi

start=$SECONDS
status=0
for v in "${variants[@]}"; do
  name=${v%%|*}
  read -r -a flags <<<"${v#*|}"
  if [ $((SECONDS - start)) -ge "$budget" ]; then
    echo "## skipped $name: past the ${budget} s budget" >>"$log"
    continue
  fi
  dir=$root/bench/shapes
  [ "$name" != dispatch ] && [ "$name" != plain ] && dir=$shapes
  [ -n "${SHAPES:-}" ] && dir=$shapes
  echo "## $name: gemm_bench --set m_sweep --layout both --check --json ${flags[*]}" >>"$log"
  t0=$SECONDS
  timeout 120 gemm_bench --set m_sweep --shapes "$dir" --layout both --check --json \
    --reps "$reps" --warmup "$warmup" "${flags[@]}" "$@" >"$OUT/m_sweep-$name.jsonl" 2>>"$log"
  rc=$?
  [ $rc -ne 0 ] && status=1
  echo "## $name exit $rc after $((SECONDS - t0)) s" >>"$log"
done
echo "## total $((SECONDS - start)) s" >>"$log"
python3 "$root/bench/best_variants.py" --csv "$OUT/best_variants.csv" "$OUT"/m_sweep-*.jsonl \
  >"$OUT/best_variants.txt" 2>&1
grep -E "^## .*(exit|skipped|total)|geomean" "$log"
sed -n '/^dispatch: geomean/,$p' "$OUT/best_variants.txt"  # the summary and the per-M table
rm -rf "$shapes"
exit "$status"
