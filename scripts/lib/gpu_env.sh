# shellcheck shell=bash
# Sourced by the GPU measurements (bench/run_bench.sh, scripts/gpu_*.sh). Unless gemm_server is on
# PATH already, puts the build's binaries there (build/: gemm_server, gemm_client, gemm_loadgen,
# gemm_bench, copy_bw, the GPU test binaries). Sets:
#   GPU_SLUG     the first GPU's name as a file name, e.g. nvidia-h100-80gb-hbm3 (the name of
#                its files in bench/results)
#   RESULTS_DIR  where the current results files are written (default: bench/results of this
#                tree; point it at the folder that comes back when the GPU is a remote machine)
#   OUT          raw reports and logs (default: /tmp/gemm-<name of the calling script>)
_gemm_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if ! command -v gemm_server >/dev/null 2>&1; then
  for _d in build/server build/client build/client/loadgen build/bench build/tests; do
    [ -d "$_gemm_root/$_d" ] && PATH=$_gemm_root/$_d:$PATH
  done
  export PATH
fi
GPU_SLUG=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' |
  sed 's/^-//; s/-$//' | tr '[:upper:]' '[:lower:]')
RESULTS_DIR=${RESULTS_DIR:-$_gemm_root/bench/results}
OUT=${OUT:-/tmp/gemm-$(basename "$0" .sh)}
mkdir -p "$RESULTS_DIR" "$OUT"
export GPU_SLUG RESULTS_DIR OUT

# wait_for_server PORT: returns once a server on 127.0.0.1:PORT answers (1 after 60 s of silence).
wait_for_server() {
  for _ in $(seq 300); do
    # shellcheck disable=SC2086  # GEMM_CLIENT_FLAGS: TLS/token flags, split on spaces
    gemm_client --target="127.0.0.1:$1" ${GEMM_CLIENT_FLAGS:-} info >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "no server answered on 127.0.0.1:$1" >&2
  return 1
}
