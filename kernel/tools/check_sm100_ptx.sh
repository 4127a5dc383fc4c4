#!/usr/bin/env bash
# PTX check of the SM100 kernel, without a GPU: compiles kernel/src/sm100/sm100_launch.cu to
# sm_100a PTX and asserts, for every GemmKernel instantiation:
#   - fence.proxy.tensormap::generic.acquire   the grouped path acquires the tensor maps it reads
#                                              from global memory before TMA uses them
#   - no mbarrier.arrive.expect_tx.release.cluster (the per-stage producer arrive: cluster scope
#     compiles to a GPU-wide fence in the main loop)
#   - no GPU-wide fence (membar.gl, fence.sc.gpu, fence.acq_rel.gpu) anywhere in the kernel
#   - 12 instantiations (the compiled variants)
# Exits 0 when all hold, 1 otherwise, 77 (skipped) when nvcc is absent.
#
# Usage: check_sm100_ptx.sh <repo root> [nvcc]
set -u -o pipefail
root="${1:?usage: check_sm100_ptx.sh <repo root> [nvcc]}"
nvcc="${2:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[[ -x "$nvcc" ]] || { echo "SKIP: nvcc not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$nvcc" -std=c++20 -arch=sm_100a -ptx --expt-relaxed-constexpr \
  -I"$root/kernel/src" -I"$root/kernel/include" \
  "$root/kernel/src/sm100/sm100_launch.cu" -o "$tmp/k.ptx" || { echo "FAIL: nvcc"; exit 1; }
# One file per GemmKernel entry.
awk -v dir="$tmp" '
  /^\.visible \.entry|^\.entry/ { out = ""; if ($0 ~ /GemmKernel/) { n++; out = dir "/e" n ".ptx" } }
  out != "" { print > out }
' "$tmp/k.ptx"
count=$(ls "$tmp"/e*.ptx 2>/dev/null | wc -l)
fail=0
[[ "$count" -eq 12 ]] || { echo "FAIL: $count GemmKernel entries, want 12"; fail=1; }
for f in "$tmp"/e*.ptx; do
  name=$(head -1 "$f" | grep -o '_Z[A-Za-z0-9_]*' | head -1)
  if ! grep -q 'fence.proxy.tensormap::generic.acquire' "$f"; then
    echo "FAIL $name: no fence.proxy.tensormap::generic.acquire"; fail=1
  fi
  if grep -q 'mbarrier.arrive.expect_tx.release.cluster' "$f"; then
    echo "FAIL $name: cluster-scope expect_tx arrive (GPU-wide fence in the main loop)"; fail=1
  fi
  if grep -Eq 'membar\.gl|fence\.sc\.gpu|fence\.acq_rel\.gpu' "$f"; then
    echo "FAIL $name: GPU-wide fence"; fail=1
  fi
done
[[ $fail -eq 0 ]] && echo "OK: $count SM100 kernels pass the PTX checks"
exit $fail
