#!/usr/bin/env bash
# Session 22, fourth call (one GPU): the CUDA IPC memcheck again (the wrapper now signals the
# server process by name); the WGMMA kernel's tile, cluster and split choices against cuBLAS at
# the M of coalesced decode units (N = K = 8192, B [N,K]).
NAME=tiles_d
source scripts/lib/device_call.sh
SANITIZED_SERVER=$B/gemm_server SANITIZER_LOG=$L/memcheck-server.log \
  SANITIZED_SERVER_FLAGS=--self_test=false GEMM_SERVER_BINARY=$PWD/scripts/lib/sanitized_server.sh \
  timeout 400 engine_gpu_service_tests --gtest_filter='*CudaIpc*' >"$L/memcheck-test.log" 2>&1
echo "memcheck CudaIpc (server only) rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/memcheck-test.log" | tr '\n' ' ') $(grep -h 'ERROR SUMMARY\|Error:' "$L"/memcheck-server.log | tr '\n' ' ')" | tee -a "$L/summary.txt"
mkdir -p "$L/shapes"
{ echo "# decode unit sizes"; for m in 144 192 208 256 272 320 384 448 512; do echo "$m 8192 8192 1"; done; } >"$L/shapes/decode.txt"
run() {  # run NAME FLAGS...
  local n=$1; shift
  timeout 120 gemm_bench --set decode --layout nk --shapes "$L/shapes" --sm90_main "$@" >"$L/t-$n.txt" 2>&1
  echo "== $n ($*) rc=$?"
  grep -E "^decode +[0-9]" "$L/t-$n.txt" | awk '{printf "%s:%s/%s ", $2, $7, $8} END {print ""}'
}
run auto
run 128x256c2 --tile 128x256 --cluster 2
run 128x256c1 --tile 128x256 --cluster 1
run 256x128c1 --tile 256x128 --cluster 1
run 256x128c2 --tile 256x128 --cluster 2
run 128x128c2 --tile 128x128 --cluster 2
run 128x128c1 --tile 128x128 --cluster 1
run 64x256c1 --tile 64x256 --cluster 1
run 128x256c2-nosplit --tile 128x256 --cluster 2 --no_split
run 256x128c1-nosplit --tile 256x128 --cluster 1 --no_split
run auto2
date -u >"$L/end.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
