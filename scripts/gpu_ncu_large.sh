#!/usr/bin/env bash
# Profiles our SM90 kernel next to cuBLAS's on the shapes where the large and batched sets trail
# most (kernel names, grid, registers, shared memory, duration, clocks, tensor-pipe activity,
# DRAM / L2 / shared-memory traffic). Runs on a GPU machine with gemm_bench built and Nsight
# Compute (ncu) installed; writes $OUT/ncu-{large,batched}.csv (ncu's CSV) and $OUT/ncu-large.log.
#   scripts/gpu_ncu_large.sh ["M N K batch" ...]
set -uo pipefail
# shellcheck source=lib/gpu_env.sh
source "$(dirname "$0")/lib/gpu_env.sh"
out=$OUT
dir=$(mktemp -d)
if [ $# -gt 0 ]; then printf '%s\n' "$@" > "$dir/large.txt"; else
  printf '%s\n' "2048 2048 2048 1" "4096 4096 4096 1" "8192 8192 8192 1" "512 28672 8192 1" \
    > "$dir/large.txt"
fi
printf '%s\n' "1024 1024 1024 32" "256 256 256 256" > "$dir/batched.txt"
metrics=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread
metrics+=,launch__shared_mem_per_block_dynamic,launch__cluster_dim_x,launch__cluster_dim_y
metrics+=,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
metrics+=,sm__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
for set in large batched; do
  ncu --clock-control none --kernel-name-base function -k 'regex:Sm90Gemm|SmallM|nvjet|xmma|cutlass' \
    --metrics "$metrics" --csv \
    gemm_bench --set $set --layout nk --shapes "$dir" --reps 3 --warmup 1 \
    > "$out/ncu-$set.csv" 2>> "$out/ncu-large.log"
  echo "ncu $set exit $?" >> "$out/ncu-large.log"
done
python3 - "$out/ncu-large.csv" "$out/ncu-batched.csv" <<'PY'
import csv, sys, collections
k = collections.OrderedDict()
for path in sys.argv[1:]:
    rows = [r for r in csv.reader(open(path)) if len(r) > 10]
    if not rows: print("no ncu rows in", path); continue
    head = rows[0]; idx = {h: i for i, h in enumerate(head)}
    for r in rows[1:]:
        key = (path[-12:] + ":" + r[idx["ID"]], r[idx["Kernel Name"]][:60])
        k.setdefault(key, {})[r[idx["Metric Name"]]] = r[idx["Metric Value"]]
for (i, name), m in k.items():
    print(i, name, " ".join(f"{n.split('.')[0].split('__')[-1]}={m.get(n,'')}" for n in
          ["gpu__time_duration.sum", "launch__grid_size", "launch__registers_per_thread",
           "launch__cluster_dim_x", "sm__cycles_elapsed.avg.per_second",
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
           "lts__t_bytes.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
           "sm__inst_executed.sum"]))
PY
