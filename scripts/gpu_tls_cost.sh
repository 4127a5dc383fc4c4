#!/usr/bin/env bash
# What TLS and bearer tokens cost, on GPU 0: each load against a plaintext server and against
# one with TLS (a certificate made by openssl on the fly) and a tokens file, in the same run,
# alternating per round (ROUNDS, default 2). Loads (LOADS, default "decode-messages decode-ipc
# large-messages"):
#   decode-messages  16x8192x8192 against a resident [N,K] weight, A and D in the gRPC messages,
#                    64 callers on 8 channels, packed streams, 0.1% checked
#   decode-ipc       the same with A and D in the load generator's GPU memory (CUDA IPC): only
#                    the small request messages cross TLS
#   large-messages   4096x4096x4096 with A and B in every request (64 MiB in, 32 MiB out),
#                    8 callers, unary RPCs, 2% checked
# Prints each run's throughput and latency; reports, server logs and the certificates under $OUT.
set -uo pipefail
here=$(dirname "$0")
# shellcheck source=lib/gpu_env.sh
source "$here/lib/gpu_env.sh"
# shellcheck source=lib/decode_run.sh
source "$here/lib/decode_run.sh"
# shellcheck source=lib/tls_setup.sh
source "$here/lib/tls_setup.sh"
decode_machine
tls_setup "$OUT/tls" || exit 1
LOADS=${LOADS:-decode-messages decode-ipc large-messages}
ROUNDS=${ROUNDS:-2}
load_flags() {  # load_flags LOAD: the load generator's flags of LOAD
  case $1 in
    decode-messages) echo "$DECODE_LOAD --shm=false" ;;
    decode-ipc) echo "$DECODE_LOAD --shm_device=0" ;;
    large-messages) echo "--shm=false --shapes=4096x4096x4096 --b=inline --b_layout=kn \
      --concurrency=8 --channels=1 --rpc=unary --verify_fraction=0.02" ;;
    *) echo "gpu_tls_cost: unknown load '$1'" >&2; exit 2 ;;
  esac
}
for round in $(seq "$ROUNDS"); do
  for load in $LOADS; do
    read -r -a lg <<<"$(load_flags "$load")"
    GEMM_CLIENT_FLAGS="" decode_run "$load-plain-$round" "${lg[@]}" --
    GEMM_CLIENT_FLAGS="${TLS_CLIENT_FLAGS[*]}" decode_run "$load-tls-$round" "${lg[@]}" \
      "${TLS_CLIENT_FLAGS[@]}" -- "${TLS_SERVER_FLAGS[@]}"
  done
done
