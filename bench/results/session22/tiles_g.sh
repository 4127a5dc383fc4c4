#!/usr/bin/env bash
# Session 22: the WGMMA kernel's tile and cluster at the M of coalesced decode units (128 < M <=
# 256, N = K = 8192), both B layouts, against cuBLAS, each checked against cuBLASLt; two rounds
# of each config. On the H100 (tiles_d.sh, [N,K]) 256x128 tiles without a cluster beat the
# dispatch's 128x256 2-CTA clusters by 4-5% at M = 144-256.
NAME=${NAME:-tiles_g}
source scripts/lib/device_call.sh
mkdir -p "$L/shapes"
{ echo "# coalesced decode unit sizes"; for m in 136 144 160 192 208 224 240 256; do echo "$m 8192 8192 1"; done; } >"$L/shapes/decode.txt"
run() {  # run NAME FLAGS...
  local n=$1; shift
  for lay in nk kn; do
    timeout 120 gemm_bench --set decode --layout $lay --shapes "$L/shapes" --sm90_main --check "$@" >"$L/t-$n-$lay.txt" 2>&1
    echo "== $n $lay ($*) rc=$?"
    grep -E "^decode +[0-9]" "$L/t-$n-$lay.txt" | awk '{printf "%s:%s/%s ", $2, $7, $8} END {print ""}'
  done
}
for r in 1 2; do
  run auto-r$r
  run 256x128c1-r$r --tile 256x128 --cluster 1
  run 128x128c1-r$r --tile 128x128 --cluster 1
done
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
